// `WWW-Authenticate` challenges of the distribution API (Basic, or Bearer with a token realm).

export interface AuthChallenge {
  /** Lowercase: `basic`, `bearer`, or whatever else the registry sent. */
  scheme: string;
  /** Parameter names lowercased: realm, service, scope, error. */
  params: Record<string, string>;
}

/** Parses the first challenge of a `WWW-Authenticate` header; undefined when absent or empty. */
export function parseAuthChallenge(header: string | null | undefined): AuthChallenge | undefined {
  const match = /^\s*([A-Za-z][\w-]*)\s*(.*)$/s.exec(header ?? '');
  if (!match) return undefined;
  const params: Record<string, string> = {};
  const rest = match[2] ?? '';
  const param = /([A-Za-z][\w-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))\s*,?\s*/gy;
  let found: RegExpExecArray | null;
  while ((found = param.exec(rest)) !== null) {
    const key = (found[1] ?? '').toLowerCase();
    const value = found[2] !== undefined ? found[2].replace(/\\(.)/g, '$1') : (found[3] ?? '');
    // A second challenge starts with a bare scheme word: stop at the first one's end.
    if (!(key in params)) params[key] = value;
    if (param.lastIndex >= rest.length) break;
  }
  return { scheme: (match[1] ?? '').toLowerCase(), params };
}
