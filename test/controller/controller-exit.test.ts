// The controller as a real process (the bundled CLI) that loses its lease in an API server outage
// longer than the renew deadline (3 s here, 10 s by default): /readyz answers 500 first, then it stops and the process
// exits with 3 so that Kubernetes restarts it, even though requests to the stopped API still hang.
// Every line it printed is JSON. The outage is real: the leased kube-apiserver is SIGSTOPped (the
// kernel accepts connections, nothing answers them), and the controller runs as deploy/'s
// ServiceAccount.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aStack } from '../support/controller-fixture.js';
import { bundleCli, spawnController, type ControllerProcess } from '../support/controller-process.js';
import {
  aCluster,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';

const NS = 'cluster-stacks';

// A real API server leased, a controller started and its first publish: many seconds under load.
describe('the controller process after losing its lease', { timeout: 300_000 }, () => {
  let fx: RealControllerFixture | undefined;
  let controller: ControllerProcess | undefined;

  beforeAll(async () => {
    fx = await startRealControllerFixture();
    await fx.createNamespace(NS);
    await fx.create(aStack('ferrol', NS));
    await fx.create(aCluster('alpha', NS, 'docker-ferrol-1-30-v2'));
  });

  afterAll(async () => {
    await controller?.killHard();
    // Thaws the server before it goes back to the broker, also when the test failed while frozen.
    await fx?.cleanup();
  });

  it('reports not-ready, then exits 3; it never stays alive idle, and prints only JSON', async () => {
    const world = fx!;
    const bundle = bundleCli();
    controller = spawnController(
      bundle,
      [
        '--git',
        world.remote,
        '--namespace',
        NS,
        '--leader-elect',
        '--lease-namespace',
        'clusterstack-system',
        '--metrics-addr',
        '127.0.0.1:0',
        // The outage outlasts the renew deadline, so the exit comes after it (twice it: the release
        // waits for the frozen server as long): short, but far above a renewal's round trip on a
        // loaded machine. This controller is a process of its own, whose event loop the test's load
        // does not hold up as it did the in-process twin's (controller-leadership-loss: 2 s ran out).
        '--leader-elect-lease-duration',
        '4s',
        '--leader-elect-renew-deadline',
        '3s',
        '--leader-elect-retry-period',
        '500ms',
      ],
      {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: world.work,
        KUBECONFIG: world.lease.controller.kubeconfigFile,
        CLUSTERSTACK_CACHE_DIR: path.join(world.work, 'cache'),
        CLUSTERSTACK_RELEASE_SOURCE: world.releases,
        CLUSTERSTACK_BATCH_WINDOW: '50ms',
      },
    );
    const started = await controller.waitForLine((line) => line['msg'] === 'Controller started', 120_000);
    const healthUrl = String(started['health']);
    await controller.waitForLine((line) => line['msg'] === 'became leader', 120_000);
    // A stopped server refuses at once, so the limit only bounds a probe of a process too busy to
    // answer: at load a 1 s one read the live controller as `closed`. The not-ready window lasts the
    // renew deadline (3 s) at least, as the release of the lease waits that long for the frozen
    // server, so the probes (one every 100 ms, each answered in milliseconds) land in it.
    const readiness = async (limitMs = 15_000): Promise<number | 'closed'> => {
      try {
        return (await fetch(`${healthUrl}/readyz`, { signal: AbortSignal.timeout(limitMs) })).status;
      } catch {
        return 'closed';
      }
    };
    await world.waitFor(
      () => (world.get('ClusterAddon', NS, 'alpha') as { status?: unknown } | undefined)?.status !== undefined,
      'the leader to publish',
    );
    expect(await readiness(15_000)).toBe(200);
    expect(await world.apiServerAnswers(30_000)).toBe(true);

    await world.freezeApiServer();
    const seen: (number | 'closed')[] = [];
    let exitCode: number | null | undefined;
    void controller.exited.then((code) => {
      exitCode = code;
    });
    const deadline = Date.now() + 60_000;
    while (exitCode === undefined && Date.now() < deadline) {
      seen.push(await readiness());
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(exitCode).toBe(3);
    const firstNotReady = seen.indexOf(500);
    expect(firstNotReady).toBeGreaterThanOrEqual(0);
    expect(seen.slice(firstNotReady).every((status) => status !== 200)).toBe(true);
    // Its last line arrived whole before the exit, and it exited by itself: the backstop of a
    // process that does not drain (src/cli/finished-command.ts) would have written to stderr.
    expect(controller.lines.at(-1)).toMatchObject({ msg: 'Controller stopped' });
    expect(controller.lines.find((line) => line['msg'] === 'Controller stopped')).toMatchObject({
      reason: 'leadership ended',
      exitCode: 3,
    });
    expect(controller.unparsed).toEqual([]);
    expect(controller.stderr.join('')).toBe('');
    // The server was still frozen when it exited: the exit did not wait for an answer (a frozen
    // server never answers; 1 s, as in controller-leadership-loss, only bounds this look).
    expect(await world.apiServerAnswers(1000)).toBe(false);
    await world.thawApiServer();
    expect(await world.apiServerAnswers(30_000)).toBe(true);
  });
});

// A controller still starting (its informers' first lists waiting on an API server that accepts
// connections and never answers) has not set up its graceful shutdown yet. SIGTERM must still end
// it, as a signal nothing handles ends a process: with 143, not a pod that waits out its grace period
// for a SIGKILL. (The CLI runs the command on a deep-stack thread, and the main thread's forwarding
// listener had swallowed the signal.)
describe('the controller process stopped while it starts', { timeout: 180_000 }, () => {
  let controller: ControllerProcess | undefined;
  let silent: Server | undefined;
  let work: string | undefined;

  afterAll(async () => {
    await controller?.killHard();
    silent?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('exits with 143 on SIGTERM before it has started', async () => {
    work = mkdtempSync(path.join(os.tmpdir(), 'csk-controller-starting-'));
    let connected: () => void = () => undefined;
    const firstConnection = new Promise<void>((resolve) => (connected = resolve));
    silent = createServer(() => connected());
    await new Promise<void>((resolve) => silent!.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const kubeconfig = path.join(work, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          { name: 'silent', cluster: { server: `https://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true } },
        ],
        users: [{ name: 'someone', user: { token: 'not-a-real-token' } }],
        contexts: [{ name: 'silent', context: { cluster: 'silent', user: 'someone' } }],
        'current-context': 'silent',
      }),
    );
    controller = spawnController(bundleCli(), ['--output', path.join(work, 'out'), '--metrics-addr', '127.0.0.1:0'], {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: work,
      KUBECONFIG: kubeconfig,
      CLUSTERSTACK_CACHE_DIR: path.join(work, 'cache'),
      CLUSTERSTACK_RELEASE_SOURCE: path.resolve('examples/quickstart/releases'),
    });
    // Its runtime is starting: it asked the API server for something, which will never answer.
    await Promise.race([
      firstConnection,
      controller.exited.then((code) =>
        Promise.reject(
          new Error(`exited ${code}: ${controller!.stderr.join('')} ${JSON.stringify(controller!.lines)}`),
        ),
      ),
    ]);
    expect(await controller.terminate()).toBe(143);
    expect(controller.lines.some((line) => line['msg'] === 'Controller started')).toBe(false);
  });
});
