import { spawnSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createLogger, logProcessWarnings } from '../../src/controller/runtime/logger.js';

function capture() {
  const lines: string[] = [];
  return { lines, destination: { write: (line: string) => void lines.push(line) } };
}

describe('createLogger', () => {
  it('writes JSON lines and redacts credentials wherever they are nested', () => {
    const { lines, destination } = capture();
    const logger = createLogger({ destination });
    logger.info(
      {
        token: 'ghp_top',
        source: { url: 'https://github.com/org/stacks', token: 'ghp_nested' },
        registry: { auth: { password: 's3cret' } },
        err: { request: { headers: { authorization: 'Bearer abc', accept: 'application/json' } } },
        headers: { authorization: 'Bearer def', cookie: 'session=1' },
        githubToken: 'ghp_config',
      },
      'release listing failed',
    );
    expect(lines).toHaveLength(1);
    const text = lines[0] as string;
    for (const secret of ['ghp_top', 'ghp_nested', 's3cret', 'Bearer abc', 'Bearer def', 'session=1', 'ghp_config'])
      expect(text).not.toContain(secret);
    const entry = JSON.parse(text) as Record<string, any>;
    expect(entry).toMatchObject({
      level: 30,
      msg: 'release listing failed',
      token: '[Redacted]',
      source: { url: 'https://github.com/org/stacks', token: '[Redacted]' },
    });
    expect(entry['err'].request.headers).toEqual({ authorization: '[Redacted]', accept: 'application/json' });
  });

  it('redacts an Error property too, and respects the level', () => {
    const { lines, destination } = capture();
    const logger = createLogger({ destination, level: 'warn' });
    logger.info({ token: 'x' }, 'hidden');
    const error = Object.assign(new Error('push failed'), {
      config: { headers: { authorization: 'token gho_secret' } },
    });
    logger.warn({ err: error }, 'publish failed');
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain('gho_secret');
    expect(JSON.parse(lines[0] as string).err).toMatchObject({
      message: 'push failed',
      config: { headers: { authorization: '[Redacted]' } },
    });
  });

  it('stamps a reconcile child logger with the object', () => {
    const { lines, destination } = capture();
    createLogger({ destination })
      .child({ kind: 'ClusterStack', namespace: 'default', name: 'ferrol' })
      .info({ release: 'docker-ferrol-1-30-v1', token: 't' }, 'rendered release');
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      kind: 'ClusterStack',
      namespace: 'default',
      name: 'ferrol',
      release: 'docker-ferrol-1-30-v1',
      token: '[Redacted]',
      msg: 'rendered release',
    });
  });

  it('prints readable lines when pretty, still redacted', () => {
    const { lines, destination } = capture();
    createLogger({ destination, pretty: true }).warn({ kind: 'ClusterStack', password: 'pw' }, 'watch failed');
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\S+ WARN watch failed kind=ClusterStack password=\[Redacted\]\n$/);
  });
});

describe('logProcessWarnings', () => {
  it('logs what Node warns about as a JSON line, and Node prints nothing of its own to stderr', () => {
    // A real node process: Node's default warning printer is what must not run.
    const script = [
      "import { EventEmitter } from 'node:events';",
      "import { createLogger, logProcessWarnings } from './src/controller/runtime/logger.ts';",
      'logProcessWarnings(createLogger());',
      'const emitter = new EventEmitter();',
      "for (let i = 0; i < 11; i++) emitter.on('close', () => undefined);",
      "process.emitWarning('old API', 'DeprecationWarning', 'DEP0999');",
    ].join('\n');
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(run.status).toBe(0);
    expect(run.stderr).toBe('');
    const lines = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, any>);
    expect(lines.map((line) => [line['level'], line['msg'], line['warning'].name])).toEqual([
      [40, 'Node.js process warning', 'MaxListenersExceededWarning'],
      [40, 'Node.js process warning', 'DeprecationWarning'],
    ]);
    expect(lines[0]!['warning'].message).toContain('11 close listeners added');
    expect(lines[1]!['warning']).toMatchObject({ message: 'old API', code: 'DEP0999' });
  });

  it("puts Node's own printer back when undone", () => {
    const source = new EventEmitter();
    const nodePrinter = () => undefined;
    source.on('warning', nodePrinter);
    const { lines, destination } = capture();
    const undo = logProcessWarnings(createLogger({ destination }), source as never);
    expect(source.listeners('warning')).not.toContain(nodePrinter);
    source.emit('warning', Object.assign(new Error('too many'), { name: 'MaxListenersExceededWarning' }));
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 40,
      warning: { name: 'MaxListenersExceededWarning', message: 'too many' },
    });
    undo();
    expect(source.listeners('warning')).toEqual([nodePrinter]);
  });
});
