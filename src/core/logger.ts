// The one logger interface: what publishers, release sources, renderers and the controller call.
// It is the subset of pino they use (fields first, then a fixed message sentence; child loggers
// with bound fields), so a pino Logger fits as it is and tests pass a recording fake.

/** Structured fields of one log line: `{ namespace, name, release }`, never a credential. */
export type LogFields = Record<string, unknown>;

/** A pino-compatible logger: one method per level, and child loggers that stamp fields on every line. */
export interface Logger {
  debug(fields: LogFields, message: string): void;
  info(fields: LogFields, message: string): void;
  warn(fields: LogFields, message: string): void;
  error(fields: LogFields, message: string): void;
  child(fields: LogFields): Logger;
}
