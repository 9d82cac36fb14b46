// Loggers for tests: one that records every line (children too, with their bound fields), one silent.
import type { LogFields, Logger } from '../../src/core/logger.js';

export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  fields: LogFields;
  message: string;
}

/** A Logger whose lines, and those of its children, land in `entries`. */
export function recordingLogger(): { logger: Logger; entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const make = (bound: LogFields): Logger => {
    const at = (level: LogEntry['level']) => (fields: LogFields, message: string) =>
      void entries.push({ level, fields: { ...bound, ...fields }, message });
    return {
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      child: (fields) => make({ ...bound, ...fields }),
    };
  };
  return { logger: make({}), entries };
}

/** A Logger that drops every line. */
export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silentLogger,
};
