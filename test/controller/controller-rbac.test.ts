// Every (group, resource, verb) the running controller issues is granted by the RBAC deploy/ ships,
// cluster-wide (deploy/) and for one namespace (deploy/namespaced). On a leased real API server, each
// variant's copy of deploy/ (fx.shippedIdentity) runs the controller through a representative
// scenario: a provider stack (the cluster-stack-operator's Docker kinds, from minimal CRDs this file
// installs: the engine cache holds none), two Clusters, leader election, events, and a drifted
// DockerClusterStackRelease repaired; the real authorizer refuses nothing, and the audit log shows our
// identity on the wire: a clusterstack-gitops/<version> User-Agent on every request, our field manager
// on every write. On the fake API server stays what the real one cannot give: a 409 on exactly the
// provider release's patch, after which the controller reads it again (the `get` the shipped roles
// once lacked); there each request is recorded as the authorizer would see it and compared with the
// roles `kubectl kustomize` builds.
import { KubeConfig } from '@kubernetes/client-node';
import { statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/types.js';
import { FIELD_MANAGER, USER_AGENT } from '../../src/controller/runtime/client-identity.js';
import { serviceAccountUser, type RequestRecord } from '../support/fake-kube-api/index.js';
import {
  aCluster,
  aStack,
  condition,
  startControllerFixture,
  type ControllerFixture,
} from '../support/controller-fixture.js';
import {
  aCluster as aRealCluster,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';
import { waitUntil } from '../support/real-kube-api/index.js';
import { auditEvents, wireIdentity, type AuditEvent } from '../support/real-kube-api/service-account.js';
import { schemalessCrd } from '../support/schemaless-crd.js';
import { kustomizeDeploy as built, type DeployDoc } from '../support/shipped-identity.js';

const SA_TOKEN = 'controller-sa-token';
const SA = serviceAccountUser('clusterstack-system', 'clusterstack-gitops-controller');
const PROVIDER = { group: 'infrastructure.clusterstack.x-k8s.io', version: 'v1alpha1' };
const PROVIDER_API = `${PROVIDER.group}/${PROVIDER.version}`;
const RELEASE = 'docker-ferrol-1-30-v2';

/** The provider template, the stack using it and two Clusters (built by `cluster`) of the scenario. */
function scenarioObjects(namespace: string, cluster: typeof aCluster): KubeObject[] {
  return [
    {
      apiVersion: PROVIDER_API,
      kind: 'DockerClusterStackReleaseTemplate',
      metadata: { name: 'docker-template', namespace },
      spec: { template: { spec: { nodeImages: ['ubuntu'] } } },
    },
    aStack('ferrol', namespace, {
      noProvider: false,
      providerRef: { apiVersion: PROVIDER_API, kind: 'DockerClusterStackReleaseTemplate', name: 'docker-template' },
    }),
    cluster('alpha', namespace, RELEASE),
    cluster('bravo', namespace, RELEASE),
  ];
}

/**
 * Leader election in `namespace`: a renewal every 200 ms, so the run renews its Lease at once. The
 * Lease and its deadline are long: the fake API server's runs share this worker with the real
 * one's (whose kubectl runs synchronously), and a stalled event loop must not cost the leadership.
 */
const leaderElection = (namespace: string) => ({
  namespace,
  name: 'clusterstack-gitops-controller',
  identity: 'rbac',
  leaseDurationMs: 60_000,
  renewDeadlineMs: 45_000,
  retryPeriodMs: 200,
});

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
type Doc = DeployDoc;

/** The rules bound to the controller's service account: cluster-wide (namespace undefined) or in one namespace. */
function grantsOf(docs: Doc[]): { namespace?: string; rules: Rule[] }[] {
  const isOurs = (binding: Doc) =>
    (binding.subjects ?? []).some(
      (subject) =>
        subject.kind === 'ServiceAccount' && `system:serviceaccount:${subject.namespace}:${subject.name}` === SA.name,
    );
  const role = (kind: string, name: string, namespace?: string) =>
    docs.find(
      (doc) =>
        doc.kind === kind &&
        doc.metadata.name === name &&
        (kind === 'ClusterRole' || doc.metadata.namespace === namespace),
    );
  return docs
    .filter((doc) => (doc.kind === 'ClusterRoleBinding' || doc.kind === 'RoleBinding') && isOurs(doc))
    .map((binding) => {
      const rules = role(binding.roleRef!.kind, binding.roleRef!.name, binding.metadata.namespace)?.rules ?? [];
      return binding.kind === 'ClusterRoleBinding' ? { rules } : { namespace: binding.metadata.namespace!, rules };
    });
}

/** `group resource[/subresource] verb` of each resource request the controller sent. */
function issued(requests: readonly RequestRecord[]): { key: string; namespace?: string; request: RequestRecord }[] {
  return requests
    .filter((request) => request.user === SA.name && request.attributes)
    .map((request) => {
      const a = request.attributes!;
      return {
        key: `${a.group || 'core'} ${a.resource}${a.subresource ? `/${a.subresource}` : ''} ${a.verb}`,
        ...(a.namespace !== undefined ? { namespace: a.namespace } : {}),
        request,
      };
    });
}

/** The issued keys no shipped rule grants. */
function ungranted(calls: ReturnType<typeof issued>, grants: ReturnType<typeof grantsOf>): string[] {
  const grantedBy = (rules: Rule[], key: string) => {
    const [group, resource, verb] = key.split(' ') as [string, string, string];
    return rules.some(
      (rule) =>
        rule.apiGroups.includes(group === 'core' ? '' : group) &&
        rule.resources.includes(resource) &&
        rule.verbs.includes(verb),
    );
  };
  const missing = calls.filter(
    (call) =>
      !grants.some(
        (grant) =>
          (grant.namespace === undefined || grant.namespace === call.namespace) && grantedBy(grant.rules, call.key),
      ),
  );
  return [...new Set(missing.map((call) => `${call.key} (in ${call.namespace ?? 'the cluster scope'})`))].sort();
}

/**
 * A representative run: a stack whose provider kind is Docker's, two
 * Clusters, leader election, events; then a DockerClusterStackRelease drifts and its patch meets a
 * conflict, so the controller reads it again (the `get` the shipped roles once lacked).
 */
async function representativeRun(
  fx: ControllerFixture,
  namespace: string,
  deploy: Doc[],
  watchNamespace?: string,
): Promise<void> {
  await fx.createNamespace(namespace);
  await fx.createNamespace('clusterstack-system');
  for (const doc of deploy.filter((candidate) => /^(Cluster)?Role(Binding)?$/.test(candidate.kind)))
    fx.api.seed(doc as never);
  const [template, ...watched] = scenarioObjects(namespace, aCluster);
  fx.api.seed(template!);
  for (const object of watched) await fx.create(object);
  fx.api.clearRequests();
  await fx.start(`rbac-${watchNamespace ?? 'all'}`, {
    kubeConfig: fx.api.kubeConfig(SA_TOKEN),
    ...(watchNamespace ? { watchNamespace } : {}),
    leaderElection: leaderElection('clusterstack-system'),
  });
  const providerRelease = () => fx.api.get(PROVIDER_API, 'DockerClusterStackRelease', namespace, RELEASE);
  await fx.waitFor(() => providerRelease() !== undefined, 'the DockerClusterStackRelease');
  await fx.waitFor(
    () =>
      fx.api.list('v1', 'Event', namespace).length > 0 &&
      condition(fx.get('ClusterStack', namespace, 'ferrol'), 'Ready') !== undefined,
    'statuses and events',
  );
  // Drift on the provider release, and a conflict on the patch that repairs it: the controller reads it again.
  fx.api.failNext({
    method: 'PATCH',
    pathIncludes: `/dockerclusterstackreleases/${RELEASE}`,
    status: 409,
    reason: 'Conflict',
    message: 'the object has been modified; please apply your changes to the latest version and try again',
  });
  const live = providerRelease() as KubeObject;
  fx.api.seed({
    ...live,
    metadata: {
      ...live.metadata,
      labels: { ...live.metadata.labels, 'clusterstack.x-k8s.io/cluster-stack': 'tampered' },
    },
  });
  await fx.waitFor(
    () => providerRelease()?.metadata.labels?.['clusterstack.x-k8s.io/cluster-stack'] === 'ferrol',
    'the drift repaired after the conflict',
  );
}

// The fake API server's cases and the real one's share nothing (each has its own server, remote and
// runtime): they run at the same time, each fake case on a fixture of its own.
describe('RBAC for the re-read after a conflict, on the fake API server', { concurrent: true }, () => {
  /** A fresh fixture, cleaned up when the case ends. */
  const startFixture = async (onTestFinished: (cleanup: () => Promise<void>) => void) => {
    const fx = await startControllerFixture({
      api: {
        users: { [SA_TOKEN]: SA },
        resources: [
          {
            ...PROVIDER,
            kind: 'DockerClusterStackReleaseTemplate',
            plural: 'dockerclusterstackreleasetemplates',
            namespaced: true,
          },
          {
            ...PROVIDER,
            kind: 'DockerClusterStackRelease',
            plural: 'dockerclusterstackreleases',
            namespaced: true,
            statusSubresource: true,
          },
        ],
      },
    });
    onTestFinished(() => fx.cleanup());
    return fx;
  };

  it('cluster-wide (deploy/): every call is granted, the re-read after a 409 included', async ({ onTestFinished }) => {
    const fx = await startFixture(onTestFinished);
    const deploy = built('');
    await representativeRun(fx, 'cluster-stacks', deploy);
    const calls = issued(fx.api.requests);
    const keys = new Set(calls.map((call) => call.key));
    // The scenario reached what it is for: provider releases created and re-read, the lease, statuses, events.
    for (const key of [
      `${PROVIDER.group} dockerclusterstackreleases create`,
      `${PROVIDER.group} dockerclusterstackreleases get`,
      `${PROVIDER.group} dockerclusterstackreleases patch`,
      'coordination.k8s.io leases update',
      'clusterstack.x-k8s.io clusteraddons/status patch',
      'core events create',
    ]) {
      expect([...keys]).toContain(key);
    }
    expect(ungranted(calls, grantsOf(deploy))).toEqual([]);
    expect(
      fx.api.requests.filter((request) => request.status === 403).map((request) => `${request.method} ${request.path}`),
    ).toEqual([]);
  }, 90_000);

  it('namespaced (deploy/namespaced): every call is granted by the Roles alone, the re-read after a 409 included', async ({
    onTestFinished,
  }) => {
    const fx = await startFixture(onTestFinished);
    const deploy = built('namespaced');
    await representativeRun(fx, 'cluster-stacks', deploy, 'cluster-stacks');
    const calls = issued(fx.api.requests);
    expect(calls.some((call) => call.key === `${PROVIDER.group} dockerclusterstackreleases get`)).toBe(true);
    expect(grantsOf(deploy).every((grant) => grant.namespace !== undefined)).toBe(true);
    expect(ungranted(calls, grantsOf(deploy))).toEqual([]);
    expect(
      fx.api.requests.filter((request) => request.status === 403).map((request) => `${request.method} ${request.path}`),
    ).toEqual([]);
  }, 90_000);
});

/** `group resource[/subresource] verb` of an audited request. */
const auditKey = (event: AuditEvent) =>
  `${event.objectRef?.apiGroup || 'core'} ${event.objectRef?.resource}${event.objectRef?.subresource ? `/${event.objectRef.subresource}` : ''} ${event.verb}`;

/** Each test waits for a publish or two of a real controller (helm, git), no more. */
const REAL_MS = 240_000;

// At the same time as the fake API server's cases above; its own cases one after the other
// (it.sequential): the cluster-wide controller would act on the namespaced run's objects too.
const REAL_SUITE = { timeout: REAL_MS, concurrent: true };

describe('RBAC the controller needs, as deploy/ ships it, on a real API server', REAL_SUITE, () => {
  let fx: RealControllerFixture;
  /** The audit log's size at the lease: reading starts there (a shared server's log holds earlier files' requests). */
  let auditFrom: number;

  beforeAll(async () => {
    fx = await startRealControllerFixture();
    auditFrom = statSync(fx.lease.auditLogFile).size;
    await fx.install([
      schemalessCrd(PROVIDER.group, 'DockerClusterStackReleaseTemplate', 'dockerclusterstackreleasetemplates', false),
      schemalessCrd(PROVIDER.group, 'DockerClusterStackRelease', 'dockerclusterstackreleases', true),
    ]);
  }, REAL_MS);

  afterAll(async () => {
    await fx?.cleanup();
  });

  /** The representative run as `overlay`'s own copy of deploy/; its ServiceAccount's audited requests. */
  async function realRun(overlay: string, namespace: string, watchNamespace?: string): Promise<AuditEvent[]> {
    await fx.createNamespace(namespace);
    const identity = await fx.shippedIdentity({ overlay, namespace: `rbac-${overlay || 'wide'}` });
    for (const object of scenarioObjects(namespace, aRealCluster)) await fx.create(object);
    const started = new Date();
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(identity.kubeconfigFile);
    const runtime = await fx.start(`rbac-${overlay || 'wide'}`, {
      kubeConfig,
      ...(watchNamespace ? { watchNamespace } : {}),
      leaderElection: leaderElection(identity.namespace),
    });
    const releasePath = `/apis/${PROVIDER_API}/namespaces/${namespace}/dockerclusterstackreleases/${RELEASE}`;
    const label = async () =>
      (await fx.admin.request('GET', releasePath)).body?.metadata?.labels?.['clusterstack.x-k8s.io/cluster-stack'] as
        string | undefined;
    await waitUntil('the DockerClusterStackRelease', async () => (await label()) === 'ferrol', [], REAL_MS);
    await fx.waitFor(
      () =>
        fx.objects('v1', 'Event', namespace).length > 0 &&
        condition(fx.get('ClusterStack', namespace, 'ferrol'), 'Ready') !== undefined,
      'statuses and events',
    );
    // Drift on the provider release: the controller patches it back.
    const tampered = await fx.admin.request('PATCH', releasePath, {
      contentType: 'application/merge-patch+json',
      body: { metadata: { labels: { 'clusterstack.x-k8s.io/cluster-stack': 'tampered' } } },
    });
    expect(tampered.status).toBe(200);
    await waitUntil('the drift repaired', async () => (await label()) === 'ferrol', [], REAL_MS);
    await runtime.stop();
    return auditEvents({ name: fx.lease.name, auditLogFile: fx.lease.auditLogFile }, auditFrom).filter(
      (event) => event.user.username === identity.user && new Date(event.requestReceivedTimestamp) >= started,
    );
  }
  const refused = (events: AuditEvent[]) =>
    events.filter((event) => event.responseStatus?.code === 403).map((event) => `${event.verb} ${event.requestURI}`);

  it.sequential(
    'cluster-wide (deploy/): nothing refused, and the calls carry our User-Agent and field manager',
    async () => {
      const ours = await realRun('', 'rbac-cluster-wide');
      const keys = new Set(ours.map(auditKey));
      // The scenario reached what it is for: provider releases created and repaired, the lease, statuses, events.
      for (const key of [
        `${PROVIDER.group} dockerclusterstackreleases create`,
        `${PROVIDER.group} dockerclusterstackreleases patch`,
        'coordination.k8s.io leases update',
        'clusterstack.x-k8s.io clusteraddons/status patch',
        'core events create',
      ]) {
        expect([...keys]).toContain(key);
      }
      expect(refused(ours)).toEqual([]);

      // Our identity on the wire: every request of the controller (informers, leases, writes) carries it.
      expect(USER_AGENT).toMatch(/^clusterstack-gitops\/\d+\.\d+\.\d+/);
      const identity = wireIdentity(ours, fx.lease.server, FIELD_MANAGER);
      expect(identity.userAgents).toEqual([USER_AGENT]);
      expect(identity.writes).toBeGreaterThan(0);
      expect(identity.foreignWrites).toEqual([]);
    },
  );

  it.sequential('namespaced (deploy/namespaced): nothing refused under the Roles alone', async () => {
    expect(grantsOf(built('namespaced')).every((grant) => grant.namespace !== undefined)).toBe(true);
    const ours = await realRun('namespaced', 'cluster-stacks', 'cluster-stacks');
    const keys = new Set(ours.map(auditKey));
    expect([...keys]).toContain(`${PROVIDER.group} dockerclusterstackreleases patch`);
    expect([...keys]).toContain('coordination.k8s.io leases update');
    expect(refused(ours)).toEqual([]);
  });
});
