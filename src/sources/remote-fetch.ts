// The `fetch` every remote read starts from: Node's own, with a connect timeout. Node's fetch has
// no connect timeout of its own worth the name (an unanswered TCP or TLS handshake hangs for
// minutes), and the only way to set one is an undici dispatcher. Idle timeouts and the total
// deadline are added by fetchWithTimeout (http-retry.ts), which the sources wrap around this.
import type { Dispatcher } from 'undici';

/** The error code undici gives a connection that was not open (TCP and TLS) in time. */
export const CONNECT_TIMEOUT_CODE = 'UND_ERR_CONNECT_TIMEOUT';

/** A fetch that gives up on opening a connection (TCP and TLS handshake) after `connectMs`. */
export function createConnectingFetch(connectMs: number, base: typeof fetch = globalThis.fetch): typeof fetch {
  // undici is loaded on the first remote request: renders from local releases never pay for it.
  let dispatcher: Promise<Dispatcher> | undefined;
  return async (input, init) => {
    dispatcher ??= import('undici').then(({ Agent }) => new Agent({ connect: { timeout: connectMs } }));
    return base(input, { ...init, dispatcher: await dispatcher } as RequestInit);
  };
}
