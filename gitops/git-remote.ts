// What a `--git` argument names (a local path, or a URL git can fetch from) and how to talk to it
// without ever writing a token where it could leak: not in the URL, not in .git/config, not in
// argv (where `ps` shows it), not in a message.
import path from 'node:path';
import { ENVIRONMENT } from '../src/config.js';
import { PublishError } from './publish-error.js';

export type GitRemote =
  /** A path on this machine; whether it is a bare repo, a work tree or new is decided when used. */
  | { kind: 'local'; path: string; display: string }
  /** Anything git fetches from by URL: file://, http(s)://, ssh://, or scp-like `host:path`. */
  | { kind: 'url'; url: string; display: string; http: boolean };

const URL_SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//;
// git's own rule: a colon before the first slash makes `host:path` an SSH address.
const SCP_LIKE = /^[^/:]+:/;

/** Classifies a `--git` argument; refuses URLs carrying a password or token. */
export function parseGitRemote(repository: string): GitRemote {
  const trimmed = repository.trim();
  if (trimmed === '') throw new PublishError('invalid-target', '--git needs a repository: a local path or a URL');
  // git would read a leading '-' as an option (e.g. --upload-pack=...).
  if (trimmed.startsWith('-'))
    throw new PublishError('invalid-target', `--git ${trimmed} starts with "-"; write a local path as ./${trimmed}`);
  if (URL_SCHEME.test(trimmed)) {
    let parsed: URL;
    try {
      parsed = new URL(trimmed);
    } catch {
      throw new PublishError('invalid-target', `--git ${trimmed} is not a valid URL`);
    }
    if (parsed.password !== '') {
      throw new PublishError(
        'invalid-target',
        `--git URL for ${parsed.host} carries a password or token; remove it from the URL and set ${ENVIRONMENT.gitToken} instead`,
      );
    }
    const http = parsed.protocol === 'http:' || parsed.protocol === 'https:';
    return { kind: 'url', url: trimmed, display: trimmed, http };
  }
  if (SCP_LIKE.test(trimmed) && !trimmed.startsWith('.'))
    return { kind: 'url', url: trimmed, display: trimmed, http: false };
  const absolute = path.resolve(trimmed);
  return { kind: 'local', path: absolute, display: absolute };
}

/** The per-command configuration that sends the token as HTTP Basic auth, as git config entries. */
export function tokenConfig(token: string): Record<string, string> {
  return { 'http.extraHeader': `Authorization: Basic ${basicCredentials(token)}` };
}

function basicCredentials(token: string): string {
  return Buffer.from(`x-access-token:${token}`, 'utf8').toString('base64');
}

/** Returns `text` with every form of the token we could have sent replaced by `***`. */
export function scrubSecret(text: string, token: string | undefined): string {
  if (token === undefined || token === '') return text;
  const forms = [
    basicCredentials(token),
    token,
    encodeURIComponent(token),
    Buffer.from(token, 'utf8').toString('base64'),
  ];
  let scrubbed = text;
  for (const form of forms) if (form !== '') scrubbed = scrubbed.split(form).join('***');
  return scrubbed;
}
