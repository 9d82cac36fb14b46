// Operator logs: pino JSON lines on stdout, with credentials redacted wherever a caller nests them.
import { pino, type DestinationStream, type Level, type Logger } from 'pino';

export interface LoggerOptions {
  level?: Level | 'silent';
  /** One readable line per entry instead of JSON, for a terminal. */
  pretty?: boolean;
  /** Where lines go; stdout by default (tests pass a collecting stream). */
  destination?: DestinationStream;
}

const SECRET_KEYS = [
  'token',
  'password',
  'authorization',
  'cookie',
  'githubToken',
  'gitToken',
  'registryPassword',
  'bearerToken',
  'clientKey',
  'client-key-data',
];

/**
 * Paths pino censors. pino's `*` matches exactly one level, so each secret key is listed at the top
 * level and up to three levels down (e.g. `err.request.headers.authorization` from an HTTP client error).
 */
const REDACT_PATHS: readonly string[] = Object.freeze(
  SECRET_KEYS.flatMap((key) => {
    const k = /^[A-Za-z_$][\w$]*$/.test(key) ? key : `["${key}"]`;
    const join = (prefix: string) => (k.startsWith('[') ? `${prefix}${k}` : `${prefix}.${k}`);
    return [k, join('*'), join('*.*'), join('*.*.*')];
  }).concat([
    'headers["set-cookie"]',
    '*.headers["set-cookie"]',
    '*.*.headers["set-cookie"]',
    'headers["proxy-authorization"]',
    '*.headers["proxy-authorization"]',
  ]),
);

const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};

/** A destination that turns pino's JSON lines into `time LEVEL message key=value ...` (after redaction). */
function prettyDestination(target: DestinationStream): DestinationStream {
  return {
    write(line: string) {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        target.write(line);
        return;
      }
      const { level, time, msg, pid: _pid, hostname: _hostname, ...fields } = entry;
      const rest = Object.entries(fields).map(
        ([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`,
      );
      const stamp = typeof time === 'number' ? new Date(time).toISOString() : '';
      target.write(
        `${stamp} ${LEVEL_NAMES[level as number] ?? String(level)} ${String(msg ?? '')}${rest.length ? ` ${rest.join(' ')}` : ''}\n`,
      );
    },
  };
}

/** A pino logger writing JSON lines (or pretty lines) to stdout, with credentials redacted. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const destination = options.destination ?? pino.destination({ dest: 1, sync: true });
  return pino(
    {
      level: options.level ?? 'info',
      redact: { paths: [...REDACT_PATHS], censor: '[Redacted]' },
    },
    options.pretty ? prettyDestination(destination) : destination,
  );
}

/** The part of `process` logProcessWarnings uses; tests may pass an EventEmitter. */
export interface WarningSource {
  listeners(event: 'warning'): ((...args: never[]) => unknown)[];
  removeAllListeners(event: 'warning'): unknown;
  on(event: 'warning', listener: (warning: Error) => void): unknown;
  off(event: 'warning', listener: (warning: Error) => void): unknown;
}

/**
 * Sends Node's process warnings (MaxListenersExceededWarning, deprecations, experimental features)
 * to `logger` as JSON lines, in place of the plain-text line Node prints to stderr, which would
 * break JSON log ingestion. Node's own printer is a `warning` listener: it is removed, and put
 * back by the function returned.
 */
export function logProcessWarnings(
  logger: Logger,
  source: WarningSource = process as unknown as WarningSource,
): () => void {
  const previous = source.listeners('warning');
  source.removeAllListeners('warning');
  const listener = (warning: Error & { code?: string; detail?: string }): void => {
    logger.warn(
      {
        warning: {
          name: warning.name,
          message: warning.message,
          ...(warning.code ? { code: warning.code } : {}),
          ...(warning.detail ? { detail: warning.detail } : {}),
          stack: warning.stack,
        },
      },
      'Node.js process warning',
    );
  };
  source.on('warning', listener);
  return () => {
    source.off('warning', listener);
    for (const other of previous) source.on('warning', other as (warning: Error) => void);
  };
}
