// Starts a server listening, and says what to do when the address cannot be had: a port in use or one
// this user may not bind is a setting to change, not a bug.
import type { Server } from 'node:net';
import { Failure } from '../../core/failure.js';

/** Why a bind fails, in words, by the error's code; anything else is passed on as it came. */
const BIND_FAILURES: Readonly<Record<string, string>> = {
  EADDRINUSE: 'the address is already in use',
  EACCES: 'this user may not listen there (a port below 1024 needs privileges)',
  EADDRNOTAVAIL: 'no network interface of this machine has that address',
};

/** Resolves once `server` listens on host:port; a bind failure rejects with a Failure naming `flag`. */
export function listenOn(server: Server, port: number, host: string | undefined, flag: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => {
      const why = error.code ? BIND_FAILURES[error.code] : undefined;
      if (!why) return reject(error);
      const address = `${host && host.includes(':') ? `[${host}]` : (host ?? '*')}:${port}`;
      reject(
        new Failure(
          'fix-input',
          `cannot listen on ${address} (${flag}): ${why}; choose another address with ${flag}, or stop what listens there`,
          { cause: error },
        ),
      );
    };
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
}
