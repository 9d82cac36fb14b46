// The GitOps wiring for management/_cluster-requests/: one Flux Kustomization or Argo CD
// Application, after the ClusterClasses, that never deletes workload clusters when it goes away.
import { describe, expect, it } from 'vitest';
import { renderWiring, type WiringOptions } from '../gitops/wiring/render-wiring.js';
import { ARGOCD_SCHEMAS } from './support/engine-schemas/argocd-schemas.js';
import { FLUX_SCHEMAS } from './support/engine-schemas/flux-schemas.js';
import { KUSTOMIZE_SCHEMAS } from './support/engine-schemas/kubernetes-schemas.js';
import { fleet, kustomizationProblems, object, schemaProblems } from './support/engine-schemas/wiring-checks.js';

const flux: WiringOptions = {
  engine: 'flux',
  name: 'clusterstacks',
  namespace: 'flux-system',
  source: { kind: 'git', url: 'https://git.example.com/platform/fleet.git', branch: 'main', path: 'rendered' },
};
const argocd: WiringOptions = { ...flux, engine: 'argocd', namespace: 'argocd' };

describe('cluster requests wiring', () => {
  it('Flux: a Kustomization for the directory, depending on every release, orphaning on deletion', () => {
    const files = renderWiring(fleet(), flux, { clusterRequests: true });
    const kustomization = object(files, 'flux/management/_cluster-requests.yaml');
    expect(kustomization.metadata).toMatchObject({ name: 'clusterstacks-cluster-requests', namespace: 'flux-system' });
    expect(kustomization.spec).toMatchObject({
      path: './rendered/management/_cluster-requests',
      prune: true,
      deletionPolicy: 'Orphan',
      sourceRef: { kind: 'GitRepository', name: 'clusterstacks' },
    });
    // Releases only: each namespace's shared.yaml is applied before its releases anyway.
    const releases = [...files.keys()].filter(
      (file) =>
        /^flux\/management\/[a-z-]+\/[^/]+\.yaml$/.test(file) &&
        !file.endsWith('kustomization.yaml') &&
        !file.endsWith('/shared.yaml'),
    );
    expect(kustomization.spec.dependsOn).toHaveLength(releases.length);
    expect(schemaProblems(files, [...FLUX_SCHEMAS, ...KUSTOMIZE_SCHEMAS])).toEqual([]);
    expect(kustomizationProblems(files)).toEqual([]);
    expect(object(files, 'flux/management/kustomization.yaml').resources).toContain('_cluster-requests.yaml');
  });

  it('Argo CD: an Application in a later wave, without the deletion finalizer', () => {
    const files = renderWiring(fleet(), argocd, { clusterRequests: true });
    const application = object(files, 'argocd/management/_cluster-requests.yaml');
    expect(application.metadata.finalizers).toBeUndefined();
    expect(application.metadata.annotations).toEqual({ 'argocd.argoproj.io/sync-wave': '1' });
    expect(application.spec.source.path).toBe('rendered/management/_cluster-requests');
    expect(schemaProblems(files, [...ARGOCD_SCHEMAS, ...KUSTOMIZE_SCHEMAS])).toEqual([]);
    expect(kustomizationProblems(files)).toEqual([]);
  });

  it('adds nothing without cluster requests', () => {
    for (const options of [flux, argocd])
      expect([...renderWiring(fleet(), options).keys()].some((file) => file.includes('_cluster-requests'))).toBe(false);
  });
});
