// Every (group, resource, verb) the running controller issues is granted by the RBAC deploy/ ships,
// cluster-wide (deploy/) and for one namespace (deploy/namespaced): recorded from a run against the
// fake API server, which sees each request as the authorizer would, and compared with the roles
// `kubectl kustomize` builds. The scenario includes a provider stack (DockerClusterStackRelease
// created, then re-read after a conflict) and leader election. The same run shows our identity on
// the wire: a clusterstack-gitops/<version> User-Agent on every request, our field manager on every write.
// The real API server runs the controller under deploy/'s RBAC too (test/controller-real-api.test.ts);
// this run stays on the fake for what the real one cannot give: a 409 on exactly the provider
// release's patch (the re-read `get`), the cluster-stack-operator's provider kinds, whose CRDs the
// engine cache does not hold, and a second RBAC variant (deploy/namespaced) per case in milliseconds.
import { afterEach, describe, expect, it } from 'vitest';
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
import { kustomizeDeploy as built, type DeployDoc } from '../support/shipped-identity.js';

const SA_TOKEN = 'controller-sa-token';
const SA = serviceAccountUser('clusterstack-system', 'clusterstack-gitops-controller');
const PROVIDER = { group: 'infrastructure.clusterstack.x-k8s.io', version: 'v1alpha1' };
const PROVIDER_API = `${PROVIDER.group}/${PROVIDER.version}`;
const RELEASE = 'docker-ferrol-1-30-v2';

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
  fx.api.seed({
    apiVersion: PROVIDER_API,
    kind: 'DockerClusterStackReleaseTemplate',
    metadata: { name: 'docker-template', namespace },
    spec: { template: { spec: { nodeImages: ['ubuntu'] } } },
  });
  await fx.create(
    aStack('ferrol', namespace, {
      noProvider: false,
      providerRef: { apiVersion: PROVIDER_API, kind: 'DockerClusterStackReleaseTemplate', name: 'docker-template' },
    }),
  );
  await fx.create(aCluster('alpha', namespace, RELEASE));
  await fx.create(aCluster('bravo', namespace, RELEASE));
  fx.api.clearRequests();
  await fx.start(`rbac-${watchNamespace ?? 'all'}`, {
    kubeConfig: fx.api.kubeConfig(SA_TOKEN),
    ...(watchNamespace ? { watchNamespace } : {}),
    leaderElection: {
      namespace: 'clusterstack-system',
      name: 'clusterstack-gitops-controller',
      identity: 'rbac',
      leaseDurationMs: 3000,
      renewDeadlineMs: 2000,
      retryPeriodMs: 200,
    },
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

describe('RBAC the controller needs, as deploy/ ships it', () => {
  let fx: ControllerFixture | undefined;
  afterEach(async () => {
    await fx?.cleanup();
    fx = undefined;
  });
  const startFixture = () =>
    startControllerFixture({
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

  it('cluster-wide (deploy/): every call is granted, and the calls carry our User-Agent and field manager', async () => {
    fx = await startFixture();
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

    // Our identity on the wire: every request of the controller (informers, leases, writes) carries it.
    const ours = fx.api.requests.filter((request) => request.user === SA.name);
    expect(USER_AGENT).toMatch(/^clusterstack-gitops\/\d+\.\d+\.\d+/);
    expect([...new Set(ours.map((request) => request.userAgent))]).toEqual([USER_AGENT]);
    const writes = ours.filter((request) => ['POST', 'PUT', 'PATCH'].includes(request.method));
    expect(writes.length).toBeGreaterThan(0);
    expect(
      writes
        .filter((request) => request.query['fieldManager'] !== FIELD_MANAGER)
        .map((request) => `${request.method} ${request.path}`),
    ).toEqual([]);
  }, 90_000);

  it('namespaced (deploy/namespaced): every call is granted by the Roles alone', async () => {
    fx = await startFixture();
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
