// The program the process spawner runs (src/core/process-spawner.ts), as source text for `node -e`:
// plain JavaScript, so it starts the same from dist/, under tsx and under vitest (a module file
// would need the TypeScript loader there, and with it a heap this process exists to avoid). It
// loads nothing but node:child_process, so its heap stays a few MiB and each fork it makes is cheap.
//
// Its side of the protocol, over Node's IPC channel (advanced serialization: Buffers as bytes):
//   in:  {t:'spawn', id, program, args, cwd, env}  {t:'stdin', id, data}  {t:'end', id}  {t:'kill', id, signal}
//   out: {t:'ready'}  {t:'out', id, fd: 1|2, data}  {t:'error', id, code, message}
//        {t:'stdin-ack', id, code}  {t:'stdin-close', id}  {t:'close', id, code, signal}
// Messages of one child keep their order, so every output arrives before its 'close'. When the
// parent goes (exit, crash, SIGKILL: the channel closes), the children are killed and it exits.

/** The spawner's source; run as `node -e SPAWNER_PROGRAM` with an IPC channel. Its first line names it in `ps`. */
export const SPAWNER_PROGRAM = String.raw`// clusterstack-gitops process spawner (src/core/spawner-program.ts)
'use strict';
const { spawn } = require('node:child_process');
const children = new Map();
// Outputs wait in this process while the parent reads slowly: past this many unsent messages the
// children's outputs pause (the pipes then hold helm back), and resume below the low mark.
const HIGH = 64;
const LOW = 16;
let backlog = 0;
let paused = false;
const setPaused = (pause) => {
  if (pause === paused) return;
  paused = pause;
  for (const child of children.values())
    for (const stream of [child.stdout, child.stderr]) pause ? stream.pause() : stream.resume();
};
const send = (message) => {
  if (!process.connected) return;
  backlog += 1;
  process.send(message, undefined, undefined, () => {
    backlog -= 1;
    if (backlog < LOW) setPaused(false);
  });
  if (backlog > HIGH) setPaused(true);
};
const start = ({ id, program, args, cwd, env }) => {
  let child;
  try {
    child = spawn(program, args, { shell: false, cwd, env, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
  } catch (error) {
    send({ t: 'error', id, code: error.code, message: error.message });
    send({ t: 'close', id, code: null, signal: null });
    return;
  }
  children.set(id, child);
  child.stdout.on('data', (data) => send({ t: 'out', id, fd: 1, data }));
  child.stderr.on('data', (data) => send({ t: 'out', id, fd: 2, data }));
  if (paused) for (const stream of [child.stdout, child.stderr]) stream.pause();
  child.stdin.on('error', () => undefined);
  child.stdin.on('close', () => send({ t: 'stdin-close', id }));
  child.on('error', (error) => send({ t: 'error', id, code: error.code, message: error.message }));
  child.on('close', (code, signal) => {
    children.delete(id);
    send({ t: 'close', id, code, signal });
  });
};
process.on('message', (message) => {
  const child = children.get(message.id);
  switch (message.t) {
    case 'spawn':
      return start(message);
    case 'stdin':
      if (!child || child.stdin.destroyed) return send({ t: 'stdin-ack', id: message.id, code: 'EPIPE' });
      return child.stdin.write(message.data, (error) => send({ t: 'stdin-ack', id: message.id, code: error ? (error.code || 'EPIPE') : undefined }));
    case 'end':
      return child && child.stdin.end();
    case 'kill':
      return child && child.kill(message.signal);
  }
});
process.on('disconnect', () => {
  for (const child of children.values()) child.kill('SIGKILL');
  process.exit(0);
});
send({ t: 'ready' });
`;
