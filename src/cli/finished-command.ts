// What a command that returned leaves behind must not keep its process alive. Requests still in
// flight when it returned are abandoned: a controller that lost its lease in an API outage has its
// lease renewal, the lease read of its release and an Event still waiting on a server that will not
// answer (client-node opens one connection per request and has no way to cancel them all). Their
// sockets are unref'd, not destroyed: nothing waits for an answer any more, and no error surfaces in
// a log that already said the command ended. A process that then drains exits at once by itself;
// one that does not has a real leak, which the backstop names before it exits.
import { subscribe } from 'node:diagnostics_channel';
import type { ClientRequest } from 'node:http';
import type { Socket } from 'node:net';

/** How long a finished command's process may take to drain before the backstop ends it. */
export const EXIT_BACKSTOP_MS = 5000;

/** The HTTP(S) requests of this thread still in flight; `abandon` lets go of them (and any started later). */
export interface ClientRequests {
  abandon(): void;
}

/** Starts tracking this thread's node:http(s) client requests (client-node's, octokit's over node-fetch). */
export function trackClientRequests(): ClientRequests {
  const open = new Set<ClientRequest>();
  let abandoned = false;
  const letGo = (request: ClientRequest): void => {
    if (request.socket) request.socket.unref();
    else request.once('socket', (socket: Socket) => socket.unref());
  };
  subscribe('http.client.request.start', (message) => {
    const { request } = message as { request: ClientRequest };
    if (abandoned) return letGo(request);
    open.add(request);
    request.once('close', () => open.delete(request));
  });
  return {
    abandon() {
      abandoned = true;
      for (const request of open) letGo(request);
      open.clear();
    },
  };
}

/**
 * Ends this process (or worker thread) with `code` if it is still alive `afterMs` after its
 * command returned, saying on stderr what still held it (a leak to fix, not a normal exit). Unref'd:
 * a process that drains exits without it.
 */
export function exitIfStillAlive(code: number, write: (text: string) => void, afterMs = EXIT_BACKSTOP_MS): void {
  setTimeout(() => {
    write(
      `clusterstack: the command finished ${afterMs} ms ago, but these still keep the process alive: ${describeOpen()}; exiting with ${code}.\nThis is a bug in clusterstack: please report it with this output and the command line.\n`,
    );
    process.exit(code);
  }, afterMs).unref();
}

/** Node's names of the resources that keep the event loop alive, counted: `TCPSocketWrap x3, Timeout`. */
function describeOpen(): string {
  const counts = new Map<string, number>();
  for (const name of process.getActiveResourcesInfo()) counts.set(name, (counts.get(name) ?? 0) + 1);
  const parts = [...counts].map(([name, count]) => (count > 1 ? `${name} x${count}` : name));
  return parts.length > 0 ? parts.join(', ') : 'nothing Node reports';
}
