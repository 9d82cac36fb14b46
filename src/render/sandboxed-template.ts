// Handlebars, sandboxed: its own environment, an explicit helper list, no prototype access.
import Handlebars from 'handlebars';

export class TemplateError extends Error {
  constructor(readonly templateName: string, reason: string) {
    super(`template ${templateName}: ${reason}`);
    this.name = 'TemplateError';
  }
}

function createEnvironment(): typeof Handlebars {
  const environment = Handlebars.create();
  environment.registerHelper('join', (list: unknown, separator: unknown) => (Array.isArray(list) ? list.join(typeof separator === 'string' ? separator : ', ') : ''));
  environment.registerHelper('eq', (a: unknown, b: unknown) => a === b);
  environment.registerHelper('length', (list: unknown) => (Array.isArray(list) ? list.length : 0));
  environment.registerHelper('plural', (count: unknown, singular: unknown, plural: unknown) => (count === 1 ? singular : plural));
  return environment;
}

const environment = createEnvironment();

/** Compiles a template once; `noEscape` because we write Markdown and commit messages, not HTML. */
export function compileTemplate(source: string, name: string): (data: object) => string {
  let compiled: Handlebars.TemplateDelegate;
  try {
    compiled = environment.compile(source, { noEscape: true, strict: false, knownHelpersOnly: false });
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
