// The `fetch` every remote read starts from, with a connect timeout. Node's fetch has no connect
// timeout of its own worth the name (an unanswered TCP or TLS handshake hangs for minutes), and the
// only way to set one is an undici dispatcher. A dispatcher only fits the fetch of the same undici:
// Node's global fetch is the undici bundled with that Node line (6 in Node 22, 7 in Node 24), and
// handing it an Agent of another undici fails on some lines (UND_ERR_INVALID_ARG). So the fetch and
// the Agent both come from our undici dependency, whatever Node runs it. Idle timeouts and the total
// deadline are added by fetchWithTimeout (http-retry.ts), which the sources wrap around this.
import { DEFAULT_TIMEOUTS } from '../config.js';

/** The error code undici gives a connection that was not open (TCP and TLS) in time. */
export const CONNECT_TIMEOUT_CODE = 'UND_ERR_CONNECT_TIMEOUT';

/** A fetch (undici's own, with its Agent) that gives up on opening a connection (TCP and TLS handshake) after `connectMs`. */
export function createConnectingFetch(connectMs: number): typeof fetch {
  // undici is loaded on the first remote request: renders from local releases never pay for it.
  let client: Promise<{ fetch: typeof import('undici').fetch; dispatcher: import('undici').Dispatcher }> | undefined;
  return async (input, init) => {
    client ??= import('undici').then(({ Agent, fetch: undiciFetch }) => ({
      fetch: undiciFetch,
      dispatcher: new Agent({ connect: { timeout: connectMs } }),
    }));
    const { fetch: undiciFetch, dispatcher } = await client;
    // The Request, Headers and body types of the global fetch and undici's are the same classes at
    // runtime on a matching line and compatible in shape on any: undici reads them as it reads its own.
    return (await undiciFetch(input as Parameters<typeof undiciFetch>[0], {
      ...(init as Parameters<typeof undiciFetch>[1]),
      dispatcher,
    })) as unknown as Response;
  };
}

/**
 * The fetch of a client given none: undici's own, with the default connect timeout. Never Node's
 * global fetch: loading undici makes its Agent the global dispatcher when none is set yet, and Node
 * 20's fetch handed that Agent fails requests that carry a body length (UND_ERR_INVALID_ARG).
 */
export const defaultRemoteFetch: typeof fetch = createConnectingFetch(DEFAULT_TIMEOUTS.connectMs);
