// Kraan's AddonsLayer (kraan.io/v1alpha1, cluster-scoped) on a leased real API server, for the
// controller tests of addon layers. Its CRD is schemaless (test/support/schemaless-crd.ts): the Go
// module proxy refuses github.com/fidelity/kraan at every version, so the engine cache has no real one;
// what these tests check is the controller's reading of layers and its status writes through the
// /status subresource, which the schemaless CRD serves as Kraan's does. The controller's rights to
// them are deploy/layers' RBAC, applied beside deploy/ as docs/controller.md tells users to.
import type { KubeObject } from '../../src/api/types.js';
import type { RealControllerFixture } from './real-controller-fixture.js';
import { waitUntil } from './real-kube-api/index.js';
import { schemalessCrd } from './schemaless-crd.js';
import { kustomizeDeploy } from './shipped-identity.js';

/** The AddonsLayer kind, for the fixture's `mirror`. */
export const ADDONS_LAYER = { apiVersion: 'kraan.io/v1alpha1', kind: 'AddonsLayer' } as const;

/** What a file installs before its mirror starts (the fixture's `install`): the CRD, and deploy/layers' ClusterRole and binding. */
export function addonsLayerInstall(): KubeObject[] {
  return [
    schemalessCrd('kraan.io', 'AddonsLayer', 'addonslayers', true, 'Cluster') as unknown as KubeObject,
    ...(kustomizeDeploy('layers') as unknown as KubeObject[]),
  ];
}

/**
 * Resolves once the server's authorizer grants the controller's ServiceAccount deploy/layers'
 * rights (its RBAC cache follows new bindings a moment later), so that the controller's first list
 * of layers is not a 403 of that moment.
 */
export async function untilLayersGranted(fx: RealControllerFixture): Promise<void> {
  const { user, namespace } = fx.lease.controller;
  const granted = async (verb: string, subresource = ''): Promise<boolean> => {
    const review = await fx.admin.request('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
          resourceAttributes: { verb, group: 'kraan.io', resource: 'addonslayers', subresource },
        },
      },
    });
    return review.status === 201 && review.body.status?.allowed === true;
  };
  await waitUntil(
    "deploy/layers' rights granted to the controller",
    async () => (await granted('watch')) && (await granted('patch', 'status')),
    [],
    60_000,
  );
}
