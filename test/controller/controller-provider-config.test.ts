// The controller reads what Cluster API provider objects name, through the RBAC deploy/ ships (on a
// real API server with the cluster-api-operator's CRDs, as the ServiceAccount of a copy of deploy/
// in a namespace of this file's: the shared server's deploy/argocd may get Secrets anywhere): the Secret of spec.configSecret and
// the ConfigMap of spec.additionalManifests by name (get), the selector ConfigMaps by label (list in
// the provider's namespace). A Secret that does not exist, or one the RBAC does not allow, withholds
// that provider alone with a message naming the object or the permission. Secret values never reach
// status, events, logs, provenance.json or commit messages.
import { statSync } from 'node:fs';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/types.js';
import { createProviderFetcher } from '../../src/providers/provider-fetcher.js';
import { createSourceOpener } from '../../src/sources/open-release-source.js';
import { decodeYamlDocuments } from '../../src/yaml/kube-yaml.js';
import { startFakeGitHub, type FakeGitHub } from '../support/fake-github/index.js';
import { addProviderRelease, providerFixture } from '../support/provider-fixtures.js';
import { condition } from '../support/controller-fixture.js';
import { startRealControllerFixture, type RealControllerFixture } from '../support/real-controller-fixture.js';
import { auditEvents } from '../support/real-kube-api/service-account.js';
import type { ShippedIdentity } from '../support/shipped-identity.js';

const OPERATOR = { group: 'operator.cluster.x-k8s.io', version: 'v1alpha2' } as const;
const SECRET_VALUE = 'tcp://docker-host-s3cr3t.example:2376';
/** The one refusal the test provokes: the Secret in a namespace where the provider-config role is not bound. */
const FORBIDDEN_READ = 'get /api/v1/namespaces/noperm/secrets/docker-variables';
/** Where this copy of deploy/ keeps its ServiceAccount (apart from the shared clusterstack-system). */
const CONTROLLER_NS = 'clusterstack-provider-config';
/** The setup and the test wait for a publish of a real controller (helm, git), no more. */
const TEST_MS = 240_000;

describe('controller reading provider Secrets and ConfigMaps', { timeout: TEST_MS }, () => {
  let fx: RealControllerFixture;
  let identity: ShippedIdentity;
  /** The audit log's size at the lease: reading starts there, not at the shared log's first file. */
  let auditFrom: number;
  let github: FakeGitHub;
  const logLines: string[] = [];
  beforeAll(async () => {
    github = await startFakeGitHub();
    addProviderRelease(github, 'infrastructure', 'v1.8.0');
    fx = await startRealControllerFixture({
      mirror: ['CoreProvider', 'InfrastructureProvider'].map((kind) => ({
        apiVersion: `${OPERATOR.group}/${OPERATOR.version}`,
        kind,
      })),
    });
    auditFrom = statSync(fx.lease.auditLogFile).size;
    identity = await fx.shippedIdentity({ overlay: '', namespace: CONTROLLER_NS });
    for (const namespace of ['capi-system', 'capd-system', 'noperm']) await fx.createNamespace(namespace);
    // deploy/ as shipped: the provider-config ClusterRole bound nowhere, then bound, as its comment
    // says, in the namespaces holding providers (not in noperm).
    for (const namespace of ['capi-system', 'capd-system']) {
      await fx.create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'clusterstack-gitops-provider-config', namespace },
        roleRef: {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'ClusterRole',
          name: `clusterstack-gitops-provider-config-${CONTROLLER_NS}`,
        },
        subjects: [{ kind: 'ServiceAccount', name: 'clusterstack-gitops-controller', namespace: CONTROLLER_NS }],
      } as never);
    }
  }, TEST_MS);
  afterAll(async () => {
    await fx?.cleanup();
    await github?.close();
  });

  const provider = (kind: string, namespace: string, name: string, spec: Record<string, unknown>): KubeObject => ({
    apiVersion: `${OPERATOR.group}/${OPERATOR.version}`,
    kind,
    metadata: { name, namespace },
    spec,
  });
  const live = (kind: string, namespace: string, name: string) =>
    fx.object(`${OPERATOR.group}/${OPERATOR.version}`, kind, namespace, name) as
      (KubeObject & { status?: Record<string, unknown> }) | undefined;
  const dockerSpec = (secret: string) => ({
    version: 'v1.8.0',
    configSecret: { name: secret },
    fetchConfig: { url: 'https://github.com/kubernetes-sigs/cluster-api-provider-docker/releases' },
  });

  it('renders with the named Secret, additional manifests and selector ConfigMaps; withholds a provider whose Secret is missing or forbidden, naming it', async () => {
    const { custom } = fx;
    // The core from selector ConfigMaps (listed by label), two unrelated ConfigMaps beside it.
    await fx.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'core-cluster-api-v1.8.0',
        namespace: 'capi-system',
        labels: { 'provider.cluster.x-k8s.io/name': 'cluster-api', 'provider.cluster.x-k8s.io/version': 'v1.8.0' },
      },
      data: {
        metadata: providerFixture('core', 'v1.8.0', 'metadata.yaml'),
        components: providerFixture('core', 'v1.8.0', 'core-components.yaml'),
      },
    } as never);
    await fx.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'unrelated', namespace: 'capi-system', labels: { 'provider.cluster.x-k8s.io/name': 'other' } },
      data: { metadata: 'x', components: 'y' },
    } as never);
    await fx.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'docker-variables', namespace: 'capd-system' },
      data: { DOCKER_HOST: Buffer.from(SECRET_VALUE).toString('base64') },
    } as never);
    await fx.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'docker-extra', namespace: 'capd-system' },
      data: {
        manifests:
          'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: docker-extra-settings\ndata:\n  from: additionalManifests\n',
      },
    } as never);
    await fx.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'docker-variables', namespace: 'noperm' },
      data: { DOCKER_HOST: Buffer.from(SECRET_VALUE).toString('base64') },
    } as never);

    const objects = [
      provider('CoreProvider', 'capi-system', 'cluster-api', {
        version: 'v1.8.0',
        fetchConfig: { selector: { matchLabels: { 'provider.cluster.x-k8s.io/name': 'cluster-api' } } },
      }),
      provider('InfrastructureProvider', 'capd-system', 'docker', {
        ...dockerSpec('docker-variables'),
        additionalManifests: { name: 'docker-extra' },
      }),
      provider('InfrastructureProvider', 'capd-system', 'docker-missing', dockerSpec('no-such-secret')),
      provider('InfrastructureProvider', 'noperm', 'docker-forbidden', dockerSpec('docker-variables')),
    ];
    for (const object of objects)
      await custom.createNamespacedCustomObject({
        ...OPERATOR,
        plural: `${object.kind.toLowerCase()}s`,
        namespace: object.metadata.namespace!,
        body: object,
      });

    const cacheDir = path.join(fx.work, 'provider-config-cache');
    const openSource = createSourceOpener({ cacheDir, githubApiUrl: github.apiUrl });
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logLines.push(String(chunk));
        done();
      },
    });
    const started = new Date();
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(identity.kubeconfigFile);
    await fx.start('provider-config', {
      kubeConfig,
      providerFetcher: createProviderFetcher({ cacheDir, githubApiUrl: github.apiUrl }, openSource),
      logger: pino({ level: 'debug' }, sink),
    });

    await fx.waitFor(
      () => condition(live('InfrastructureProvider', 'capd-system', 'docker'), 'ManifestsPublished')?.status === 'True',
      'the docker provider published',
    );
    await fx.waitFor(
      () =>
        condition(live('InfrastructureProvider', 'noperm', 'docker-forbidden'), 'ManifestsRendered')?.reason ===
        'ManifestsWithheld',
      'the forbidden provider withheld',
    );
    await fx.waitFor(
      () =>
        condition(live('InfrastructureProvider', 'capd-system', 'docker-missing'), 'ManifestsRendered')?.reason ===
        'ManifestsWithheld',
      'the missing-secret provider withheld',
    );

    const published = fx.published();
    const dockerObjects = Object.entries(published)
      .filter(
        ([file]) =>
          file.startsWith('management/providers/infrastructureprovider-docker/') &&
          !file.endsWith('kustomization.yaml'),
      )
      .flatMap(([, text]) => decodeYamlDocuments(text).map((document) => document.value as any));
    // The variable's value from the Secret, the object from additionalManifests.
    expect(
      dockerObjects.find((object) => object.kind === 'ConfigMap' && object.metadata.name === 'capd-settings')?.data
        .dockerHost,
    ).toBe(SECRET_VALUE);
    expect(dockerObjects.find((object) => object.metadata.name === 'docker-extra-settings')).toMatchObject({
      kind: 'ConfigMap',
      metadata: { namespace: 'capd-system' },
      data: { from: 'additionalManifests' },
    });
    // The core from its selector ConfigMap.
    expect(live('CoreProvider', 'capi-system', 'cluster-api')!.status).toMatchObject({
      installedVersion: 'v1.8.0',
      contract: 'v1beta1',
    });
    expect(condition(live('CoreProvider', 'capi-system', 'cluster-api'), 'ManifestsRendered')!.message).toContain(
      'ConfigMap capi-system/core-cluster-api-v1.8.0',
    );

    const forbidden = condition(live('InfrastructureProvider', 'noperm', 'docker-forbidden'), 'ManifestsRendered')!
      .message as string;
    expect(forbidden).toContain('Secret noperm/docker-variables cannot be read');
    expect(forbidden).toContain('may not get secrets in namespace noperm (403 Forbidden)');
    expect(forbidden).toContain(
      'kubectl create rolebinding clusterstack-gitops-provider-config -n noperm --clusterrole clusterstack-gitops-provider-config',
    );
    expect(
      condition(live('InfrastructureProvider', 'capd-system', 'docker-missing'), 'ManifestsRendered')!.message,
    ).toContain('Secret capd-system/no-such-secret does not exist');
    expect(
      Object.keys(published).some((file) => file.includes('docker-missing') || file.includes('docker-forbidden')),
    ).toBe(false);

    // Least privilege: Secrets are read one by one (GET), never listed or watched; ConfigMaps listed
    // only in the selector's namespace. The one 403 is the forbidden Secret.
    const requests = auditEvents({ name: fx.lease.name, auditLogFile: fx.lease.auditLogFile }, auditFrom)
      .filter((event) => event.user.username === identity.user && new Date(event.requestReceivedTimestamp) >= started)
      .map((event) => ({
        method: event.verb,
        path: event.requestURI.split('?')[0]!,
        status: event.responseStatus?.code,
      }));
    const secretRequests = requests.filter((request) => /\/secrets(\/|$)/.test(request.path));
    expect(secretRequests.length).toBeGreaterThan(0);
    expect(
      secretRequests.every(
        (request) => request.method === 'get' && /\/namespaces\/[^/]+\/secrets\/[^/]+$/.test(request.path),
      ),
    ).toBe(true);
    const configMapLists = requests.filter((request) => /\/configmaps$/.test(request.path));
    expect([...new Set(configMapLists.map((request) => request.path))]).toEqual([
      '/api/v1/namespaces/capi-system/configmaps',
    ]);
    expect([
      ...new Set(
        requests.filter((request) => request.status === 403).map((request) => `${request.method} ${request.path}`),
      ),
    ]).toEqual([FORBIDDEN_READ]);

    // The value is in the rendered ConfigMap (the components ask for it), nowhere else.
    const everything = JSON.stringify([
      objects.map((object) => live(object.kind, object.metadata.namespace!, object.metadata.name)?.status),
      ['capi-system', 'capd-system', 'noperm', 'default'].flatMap((namespace) => fx.objects('v1', 'Event', namespace)),
      fx.git.files(fx.remote, 'main')['provenance.json'],
      fx.git.git(fx.remote, 'log', '--format=%B', 'main'),
      logLines,
    ]);
    expect(logLines.length).toBeGreaterThan(0);
    expect(everything).not.toContain(SECRET_VALUE);
    expect(everything).not.toContain(Buffer.from(SECRET_VALUE).toString('base64'));
    expect(fx.git.files(fx.remote, 'main')['provenance.json']).toContain('"name": "docker-variables"');
  });
});
