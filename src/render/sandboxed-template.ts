// Handlebars, sandboxed: its own environment, an explicit helper list, no prototype access.
import { createRequire } from 'node:module';
import type Handlebars from 'handlebars';
import { Failure } from '../core/failure.js';

export class TemplateError extends Failure {
  constructor(
    readonly templateName: string,
    readonly reason: string,
  ) {
    super('fix-input', `template ${templateName}: ${reason}`);
    this.name = 'TemplateError';
  }
}

function createEnvironment(module: 'handlebars' | 'handlebars/runtime'): typeof Handlebars {
  const created = (createRequire(import.meta.url)(module) as typeof Handlebars).create();
  // Only the block helpers (if, unless, each, with) and ours below: lookup and log are not needed.
  created.unregisterHelper('lookup');
  created.unregisterHelper('log');
  created.registerHelper('join', (list: unknown, separator: unknown) =>
    Array.isArray(list) ? list.join(typeof separator === 'string' ? separator : ', ') : '',
  );
  created.registerHelper('eq', (a: unknown, b: unknown) => a === b);
  created.registerHelper('length', (list: unknown) => (Array.isArray(list) ? list.length : 0));
  created.registerHelper('plural', (count: unknown, singular: unknown, plural: unknown) =>
    count === 1 ? singular : plural,
  );
  return created;
}

/**
 * Loaded on first use (about 40 ms of module loading): a render needs it for the README only, once
 * its first helm processes are under way (warmReadmeTemplate), not while it plans.
 */
let environment: typeof Handlebars | undefined;
/** Handlebars' runtime alone (no compiler): enough for a template compiled ahead (precompiledTemplate). */
let runtimeEnvironment: typeof Handlebars | undefined;

const HELPERS = { join: true, eq: true, length: true, plural: true, lookup: false, log: false };
const compileOptions = (strict: boolean) =>
  ({ noEscape: true, strict, knownHelpers: HELPERS, knownHelpersOnly: true }) as const;

/**
 * Handlebars compiles a template on its first use, which costs more than rendering it many times
 * (tens of milliseconds for the output README): the controller renders the same few templates on
 * every reconcile, so compiled templates are kept, by source and strictness.
 */
const compiledTemplates = new Map<string, Handlebars.TemplateDelegate>();
const COMPILED_KEPT = 32;

/**
 * Compiles a template once; `noEscape` because we write Markdown and commit messages, not HTML.
 * Only our helpers exist; with `strict`, naming a variable the data does not have is an error.
 */
export function compileTemplate(
  source: string,
  name: string,
  options: { strict?: boolean } = {},
): (data: object) => string {
  const strict = options.strict ?? false;
  const key = `${strict}\0${source}`;
  let compiled = compiledTemplates.get(key);
  if (!compiled) {
    // Outside the try: Handlebars failing to load is an installation's problem, not the template's.
    environment ??= createEnvironment('handlebars');
    try {
      compiled = environment.compile(source, compileOptions(strict));
    } catch (error) {
      throw new TemplateError(name, (error as Error).message);
    }
    if (compiledTemplates.size >= COMPILED_KEPT) compiledTemplates.clear();
    compiledTemplates.set(key, compiled);
  }
  return sandboxed(compiled, name);
}

/**
 * What Handlebars compiles `source` to, as JavaScript source (a template specification) that
 * precompiledTemplate runs: compiled ahead, with compileTemplate's options (not strict), a template
 * that every render uses costs no compiling at run time.
 */
export function precompileTemplate(source: string): string {
  environment ??= createEnvironment('handlebars');
  // Typed as a specification object; Handlebars returns its source text.
  return environment.precompile(source, compileOptions(false)) as unknown as string;
}

let precompiled: { spec: string; template: Handlebars.TemplateDelegate } | undefined;

/**
 * The template precompileTemplate gave `spec` for: what compileTemplate(source) gives (not strict),
 * without loading Handlebars' compiler or compiling. Tens of milliseconds of CPU less in every
 * render that writes the default README (test/readme-precompiled.test.ts keeps the spec current).
 */
export function precompiledTemplate(spec: string, name: string): (data: object) => string {
  if (precompiled?.spec !== spec) {
    runtimeEnvironment ??= createEnvironment('handlebars/runtime');
    // The specification is our own build's JavaScript (a module of this package), never input.
    const specification = new Function(`return ${spec};`)() as Parameters<typeof Handlebars.template>[0];
    precompiled = { spec, template: runtimeEnvironment.template(specification) };
  }
  return sandboxed(precompiled.template, name);
}

/** Runs a template with prototype access refused, its errors as TemplateError. */
function sandboxed(template: Handlebars.TemplateDelegate, name: string): (data: object) => string {
  return (data) => {
    try {
      return template(data, {
        allowProtoPropertiesByDefault: false,
        allowProtoMethodsByDefault: false,
        allowCallsToHelperMissing: false,
      });
    } catch (error) {
      throw new TemplateError(name, (error as Error).message);
    }
  };
}
