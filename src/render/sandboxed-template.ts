// Handlebars, sandboxed: its own environment, an explicit helper list, no prototype access.
import Handlebars from 'handlebars';

export class TemplateError extends Error {
  readonly failureKind = 'fix-input' as const;
  constructor(readonly templateName: string, readonly reason: string) {
    super(`template ${templateName}: ${reason}`);
    this.name = 'TemplateError';
  }
}

function createEnvironment(): typeof Handlebars {
  const environment = Handlebars.create();
  // Only the block helpers (if, unless, each, with) and ours below: lookup and log are not needed.
  environment.unregisterHelper('lookup');
  environment.unregisterHelper('log');
  environment.registerHelper('join', (list: unknown, separator: unknown) => (Array.isArray(list) ? list.join(typeof separator === 'string' ? separator : ', ') : ''));
  environment.registerHelper('eq', (a: unknown, b: unknown) => a === b);
  environment.registerHelper('length', (list: unknown) => (Array.isArray(list) ? list.length : 0));
  environment.registerHelper('plural', (count: unknown, singular: unknown, plural: unknown) => (count === 1 ? singular : plural));
  return environment;
}

const environment = createEnvironment();

const HELPERS = { join: true, eq: true, length: true, plural: true, lookup: false, log: false };

/**
 * Compiles a template once; `noEscape` because we write Markdown and commit messages, not HTML.
 * Only our helpers exist; with `strict`, naming a variable the data does not have is an error.
 */
export function compileTemplate(source: string, name: string, options: { strict?: boolean } = {}): (data: object) => string {
  let compiled: Handlebars.TemplateDelegate;
  try {
    compiled = environment.compile(source, { noEscape: true, strict: options.strict ?? false, knownHelpers: HELPERS, knownHelpersOnly: true });
  } catch (error) {
    throw new TemplateError(name, (error as Error).message);
  }
  return (data) => {
    try {
      return compiled(data, { allowProtoPropertiesByDefault: false, allowProtoMethodsByDefault: false, allowCallsToHelperMissing: false });
    } catch (error) {
      throw new TemplateError(name, (error as Error).message);
    }
  };
}
