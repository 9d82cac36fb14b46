// Commit messages come from a Handlebars template (templates/commit-message.ts, or a user's),
// rendered in a sandbox: a private Handlebars instance, no prototype access, no helpers beyond the
// built-in block helpers, plain text (no HTML escaping), and unknown variables are errors.
import { compileTemplate, TemplateError } from '../src/render/sandboxed-template.js';
import type { ChangeSummary } from '../src/output/tree-changes.js';
import { PublishError } from './publish-error.js';
import { COMMIT_MESSAGE_TEMPLATE } from './templates/commit-message.js';

/** What a commit message template sees. */
interface CommitMessageContext {
  title: string;
  body: string;
  /** The trailers in order; they are appended after the template's text in any case. */
  trailers: { key: string; value: string }[];
}

export type CommitMessageRenderer = (change: ChangeSummary) => string;

const TRAILER_KEY = /^[A-Za-z0-9][A-Za-z0-9-]*$/;
function trailerLines(trailers: Record<string, string>): { key: string; value: string }[] {
  return Object.entries(trailers).map(([key, value]) => {
    if (!TRAILER_KEY.test(key))
      throw new PublishError('invalid-input', `commit trailer "${key}": keys may only contain letters, digits and "-"`);
    const trimmed = value.trim();
    if (trimmed === '' || /[\r\n]/.test(trimmed))
      throw new PublishError('invalid-input', `commit trailer "${key}": the value must be one non-empty line`);
    return { key, value: trimmed };
  });
}

/**
 * Compiles a commit message template (Handlebars source; the default when undefined) into a
 * renderer that returns the message with the change's trailers as the last paragraph. Throws
 * PublishError('invalid-input') now for syntax errors and unknown variables, not at the first commit.
 */
export function compileCommitMessage(template?: string): CommitMessageRenderer {
  const source = template ?? COMMIT_MESSAGE_TEMPLATE;
  let compiled: (data: object) => string;
  try {
    compiled = compileTemplate(source, 'commit message', { strict: true });
  } catch (error) {
    throw new PublishError(
      'invalid-input',
      `commit message template: ${error instanceof TemplateError ? error.reason : (error as Error).message}`,
      { cause: error },
    );
  }
  const render = (change: ChangeSummary): string => {
    const trailers = trailerLines(change.trailers);
    let text: string;
    try {
      const context: CommitMessageContext = { title: change.title, body: change.body, trailers };
      text = compiled(context);
    } catch (error) {
      throw new PublishError(
        'invalid-input',
        `commit message template: ${error instanceof TemplateError ? error.reason : (error as Error).message}`,
        { cause: error },
      );
    }
    const message = text
      .replace(/\r\n/g, '\n')
      .replace(/[ \t]+$/gm, '')
      .replace(/\n{3,}/g, '\n\n')
      .trim();
    if (message === '') throw new PublishError('invalid-input', 'commit message template rendered an empty message');
    if (trailers.length === 0) return `${message}\n`;
    return `${message}\n\n${trailers.map(({ key, value }) => `${key}: ${value}`).join('\n')}\n`;
  };
  // A template naming an unknown variable fails here, before anything is cloned or written.
  render({ title: 'Check the commit message template', body: 'A body.', trailers: { 'Check-Trailer': 'value' } });
  return render;
}
