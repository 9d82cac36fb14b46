// Two replicas with leader election and the runtime extension: the Service Cluster API calls is
// routed to the leader alone through the EndpointSlice the leader writes, and a new leader takes it
// over. On a real API server as deploy/'s ServiceAccount (the runtime-extension component's Role).
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerRuntime } from '../../src/controller/run-controller.js';
import { startRealControllerFixture, type RealControllerFixture } from '../support/real-controller-fixture.js';
import { makeSelfSignedCert, type SelfSignedCert } from '../support/self-signed-cert.js';

const NS = 'clusterstack-system';
const SERVICE = 'clusterstack-gitops-runtime-extension';

describe('runtime extension Service routed to the leader', () => {
  let fixture: RealControllerFixture;
  let cert: SelfSignedCert;
  const replicas = new Map<string, ControllerRuntime>();

  const slice = () =>
    fixture.object('discovery.k8s.io/v1', 'EndpointSlice', NS, `${SERVICE}-leader`) as Record<string, any> | undefined;
  const sliceAddress = () => slice()?.['endpoints']?.[0]?.addresses?.[0] as string | undefined;
  const start = (name: string, podIP: string) =>
    fixture.start(name, {
      leaderElection: {
        namespace: NS,
        name: 'clusterstack-gitops-controller',
        identity: name,
        // A stopped leader releases the Lease, and the standby (retrying every 100 ms) takes it
        // over at once: the long Lease and deadline only keep a loaded machine's stalls from
        // costing the leadership.
        leaseDurationMs: 60_000,
        renewDeadlineMs: 45_000,
        retryPeriodMs: 100,
      },
      runtimeExtension: {
        port: 0,
        host: '127.0.0.1',
        certFile: cert.certFile,
        keyFile: cert.keyFile,
        leaderService: { service: SERVICE, namespace: NS, podIP, podName: name },
      },
    });

  beforeAll(async () => {
    fixture = await startRealControllerFixture({
      mirror: [{ apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice' }],
    });
    await fixture.createNamespace(NS);
    cert = makeSelfSignedCert();
    replicas.set('replica-a', await start('replica-a', '10.0.0.1'));
    replicas.set('replica-b', await start('replica-b', '10.0.0.2'));
  }, 180_000);

  afterAll(async () => {
    await fixture?.cleanup();
    if (cert) rmSync(cert.dir, { recursive: true, force: true });
  });

  it('points the Service at the leader, and at the next leader once it is gone', async () => {
    await fixture.waitFor(() => [...replicas.values()].some((replica) => replica.isLeader()), 'a leader');
    const [leaderName, leader] = [...replicas].find(([, replica]) => replica.isLeader())!;
    const [standbyName, standby] = [...replicas].find(([, replica]) => !replica.isLeader())!;
    const ipOf = (name: string) => (name === 'replica-a' ? '10.0.0.1' : '10.0.0.2');
    await fixture.waitFor(() => sliceAddress() === ipOf(leaderName), 'the slice naming the leader');
    expect(slice()).toMatchObject({
      metadata: {
        labels: {
          'kubernetes.io/service-name': SERVICE,
          'endpointslice.kubernetes.io/managed-by': 'clusterstack-gitops',
        },
      },
      addressType: 'IPv4',
      endpoints: [
        {
          addresses: [ipOf(leaderName)],
          conditions: { ready: true },
          targetRef: { kind: 'Pod', namespace: NS, name: leaderName },
        },
      ],
      ports: [{ name: 'https', protocol: 'TCP', port: Number(new URL(leader.extensionUrl!).port) }],
    });

    await leader.stop();
    await fixture.waitFor(() => standby.isLeader(), 'the standby to take the lease over');
    await fixture.waitFor(() => sliceAddress() === ipOf(standbyName), 'the slice naming the new leader');
    expect(slice()!['endpoints']).toHaveLength(1);
    expect(slice()!['ports'][0]['port']).toBe(Number(new URL(standby.extensionUrl!).port));
  }, 60_000);
});
