// What the running controller writes to the API server: objects for long names, events that
// `kubectl describe` can show, provider kinds found through discovery, and statuses that stay as
// they are across a restart (the commits they name come from Git, not from memory). On a real API
// server as deploy/'s ServiceAccount; the made-up provider's CRDs, and a ClusterRole granting its
// kinds as deploy/base/clusterrole.yaml's comment tells a provider to, are this file's alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerRuntime } from '../../src/controller/run-controller.js';
import { aStack, condition } from '../support/controller-fixture.js';
import { schemalessCrd } from '../support/schemaless-crd.js';
import {
  aCluster,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';

const NS = 'cluster-stacks';
const LONG = `ferrol-${'x'.repeat(60)}-stack`;
const PROVIDER_GROUP = 'infrastructure.example.com';

/** Each test and the setup wait for a publish or two of a real controller (helm, git), no more. */
const TEST_MS = 240_000;

/** A CRD of the made-up provider; its plurals are not "lowercase kind + s": only discovery finds them. */
const providerCrd = (kind: string, plural: string, statusSubresource: boolean) =>
  schemalessCrd(PROVIDER_GROUP, kind, plural, statusSubresource);

/** The rules deploy/base/clusterrole.yaml's comment gives for adding a provider, for the made-up one, bound to the controller. */
function providerRbac(fx: RealControllerFixture): Record<string, unknown>[] {
  const name = 'clusterstack-gitops-example-provider';
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: [
        { apiGroups: [PROVIDER_GROUP], resources: ['exampletemplates', 'examplereleases'], verbs: ['list', 'watch'] },
        { apiGroups: [PROVIDER_GROUP], resources: ['examplereleases'], verbs: ['get', 'create', 'patch', 'delete'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [
        {
          kind: 'ServiceAccount',
          name: fx.lease.controller.user.split(':').at(-1),
          namespace: fx.lease.controller.namespace,
        },
      ],
    },
  ];
}

const versions = (fx: RealControllerFixture) =>
  Object.fromEntries(
    ['ClusterStack', 'ClusterStackRelease', 'ClusterAddon'].flatMap((kind) =>
      fx
        .objects('clusterstack.x-k8s.io/v1alpha1', kind, NS)
        .map((object) => [`${kind}/${object.metadata.name}`, object.metadata.resourceVersion]),
    ),
  );

describe('controller objects, events and statuses', { timeout: TEST_MS }, () => {
  let fx: RealControllerFixture;
  let runtime: ControllerRuntime;

  beforeAll(async () => {
    fx = await startRealControllerFixture();
    // A provider whose plurals are not "lowercase kind + s": only discovery finds them.
    await fx.install([
      providerCrd('ExampleClusterStackReleaseTemplate', 'exampletemplates', false),
      providerCrd('ExampleClusterStackRelease', 'examplereleases', true),
      ...providerRbac(fx),
    ]);
    await fx.createNamespace(NS);
    await fx.create(aStack(LONG, NS));
    await fx.create(aCluster('alpha', NS, 'docker-ferrol-1-30-v2'));
    runtime = await fx.start('first');
    await fx.waitFor(
      () => condition(fx.get('ClusterAddon', NS, 'alpha'), 'ManifestsPublished')?.status === 'True',
      'the first publish',
    );
  }, TEST_MS);

  afterAll(async () => {
    await fx?.cleanup();
  });

  it('serves a ClusterStack whose name is longer than 63 characters', async () => {
    await fx.waitFor(
      () => condition(fx.get('ClusterStack', NS, LONG), 'Ready')?.status === 'True',
      'the long-named stack Ready',
    );
    const release = fx.get('ClusterStackRelease', NS, 'docker-ferrol-1-30-v2')!;
    const label = release.metadata.labels?.['clusterstack.x-k8s.io/cluster-stack'] ?? '';
    expect(label.length).toBeLessThanOrEqual(63);
    expect(label).toMatch(/^ferrol-x+-[0-9a-f]{10}$/);
    expect(release.metadata.annotations?.['clusterstack.x-k8s.io/full-cluster-stack']).toBe(LONG);
  });

  it('records every event with the uid of the object it is about', async () => {
    const events = () => fx.objects('v1', 'Event', NS) as Record<string, any>[];
    // Events are recorded once the objects they are about exist: after the statuses.
    await fx.waitFor(
      () =>
        events().some(
          (event) => event['reason'] === 'ManifestsPublished' && event['involvedObject'].kind === 'ClusterAddon',
        ),
      'the events of the first publish',
    );
    const kinds = new Set(events().map((event) => event['involvedObject'].kind));
    expect([...kinds].sort()).toEqual(['ClusterAddon', 'ClusterStack', 'ClusterStackRelease']);
    for (const event of events()) {
      const subject = fx.object(
        event['involvedObject'].apiVersion,
        event['involvedObject'].kind,
        NS,
        event['involvedObject'].name,
      );
      expect({ reason: event['reason'], uid: event['involvedObject'].uid }).toEqual({
        reason: event['reason'],
        uid: subject?.metadata.uid,
      });
    }
  });

  it('finds provider kinds through discovery, and says which kind is not served', async () => {
    // Written under its real plural (the fixture's create would guess it from the kind).
    const template = await fx.admin.request(
      'POST',
      `/apis/${PROVIDER_GROUP}/v1alpha1/namespaces/${NS}/exampletemplates`,
      {
        body: {
          apiVersion: `${PROVIDER_GROUP}/v1alpha1`,
          kind: 'ExampleClusterStackReleaseTemplate',
          metadata: { name: 'images', namespace: NS },
          spec: { template: { spec: { imageSize: 'large' } } },
        },
      },
    );
    expect(template.status).toBe(201);
    const providerStack = aStack('example', NS, {
      provider: 'example',
      versions: [],
      noProvider: false,
      providerRef: {
        apiVersion: `${PROVIDER_GROUP}/v1alpha1`,
        kind: 'ExampleClusterStackReleaseTemplate',
        name: 'images',
      },
    });
    await fx.create(providerStack);
    await fx.create(
      aStack('missing', NS, {
        provider: 'missing',
        versions: [],
        noProvider: false,
        providerRef: {
          apiVersion: 'infrastructure.missing.example/v1',
          kind: 'MissingClusterStackReleaseTemplate',
          name: 'x',
        },
      }),
    );
    await fx.waitFor(
      () => condition(fx.get('ClusterStack', NS, 'missing'), 'Ready')?.reason === 'ProviderKindNotServed',
      'the missing kind reported',
    );
    expect(condition(fx.get('ClusterStack', NS, 'missing'), 'Ready')?.message).toContain(
      'MissingClusterStackReleaseTemplate (infrastructure.missing.example/v1) is not served: the API server does not serve infrastructure.missing.example/v1',
    );
    // The example kinds were listed and watched under their real plurals.
    const paths = fx.controllerRequests().map((event) => event.requestURI.split('?')[0]!);
    expect(paths.some((request) => request.endsWith(`/${PROVIDER_GROUP}/v1alpha1/exampletemplates`))).toBe(true);
    expect(paths.some((request) => request.includes('exampleclusterstackreleasetemplates'))).toBe(false);
  });

  it('writes no status again after a restart: the commits it names come from Git', async () => {
    // A second commit, so that the directories last changed in different commits.
    await fx.create(aCluster('bravo', NS, 'docker-ferrol-1-30-v2'));
    await fx.waitFor(
      () => condition(fx.get('ClusterAddon', NS, 'bravo'), 'ManifestsPublished')?.status === 'True',
      'bravo published',
    );
    const alphaCommit = condition(fx.get('ClusterAddon', NS, 'alpha'), 'ManifestsPublished')?.message;
    expect(alphaCommit).not.toEqual(
      condition(fx.get('ClusterAddon', NS, 'bravo'), 'ManifestsPublished')?.message?.replace('bravo', 'alpha'),
    );
    await fx.waitFor(() => runtime.metrics.reconciles.value({ result: 'success' }) > 0, 'a settled reconcile');
    await runtime.stop();
    const before = versions(fx);
    const commits = fx.git.commitCount(fx.remote, 'main');

    const restarted = await fx.start('restarted');
    await fx.waitFor(() => restarted.controller.completedReconciles >= 1, 'the restarted controller to reconcile');
    expect(versions(fx)).toEqual(before);
    expect(fx.git.commitCount(fx.remote, 'main')).toBe(commits);
    expect(condition(fx.get('ClusterAddon', NS, 'alpha'), 'ManifestsPublished')?.message).toBe(alphaCommit);
  });
});
