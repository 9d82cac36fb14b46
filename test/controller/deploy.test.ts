// deploy/: the manifests that install the controller say what the controller needs, and no more.
import { readFileSync } from 'node:fs';
import * as yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { Controller } from '../../src/controller/controller.js';
import { CAPI_PROVIDER_KINDS } from '../../src/controller/desired-state/watched-kinds.js';
import { kustomizeBuild } from '../support/engine-schemas/kustomize-build.js';

type Doc = { kind: string; metadata: { name: string; namespace?: string }; [key: string]: unknown };
const docs = (file: string): Doc[] => yaml.loadAll(readFileSync(`deploy/${file}`, 'utf8')) as Doc[];
type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };

function allows(rules: Rule[], group: string, resource: string, verb: string): boolean {
  return rules.some((rule) => rule.apiGroups.includes(group) && rule.resources.includes(resource) && rule.verbs.includes(verb));
}

describe('deploy/', () => {
  const [clusterRole] = docs('base/clusterrole.yaml');
  const rules = clusterRole!['rules'] as Rule[];

  it('grants list and watch on every kind the controller watches, and the writes it makes', () => {
    for (const kind of [...Controller.watchedKinds('flux'), ...Controller.watchedKinds('argocd')]) {
      expect(allows(rules, kind.group, kind.plural, 'list'), kind.plural).toBe(true);
      expect(allows(rules, kind.group, kind.plural, 'watch'), kind.plural).toBe(true);
    }
    for (const resource of ['clusterstackreleases', 'clusteraddons']) for (const verb of ['get', 'create', 'patch', 'delete']) expect(allows(rules, 'clusterstack.x-k8s.io', resource, verb)).toBe(true);
    for (const resource of ['clusterstacks', 'clusterstackreleases', 'clusteraddons']) expect(allows(rules, 'clusterstack.x-k8s.io', `${resource}/status`, 'patch')).toBe(true);
    // Cluster API providers: status only, never their spec.
    for (const kind of CAPI_PROVIDER_KINDS) {
      expect(allows(rules, kind.group, `${kind.plural}/status`, 'patch'), kind.plural).toBe(true);
      for (const verb of ['patch', 'update', 'create', 'delete']) expect(allows(rules, kind.group, kind.plural, verb), `${kind.plural} ${verb}`).toBe(false);
    }
    expect(allows(rules, 'clusterstack.x-k8s.io', 'clusterstacks', 'delete')).toBe(false);
    expect(allows(rules, '', 'events', 'create')).toBe(true);
    expect(allows(rules, '', 'secrets', 'get')).toBe(false);
    expect(rules.every((rule) => !rule.verbs.includes('*') && !rule.resources.includes('*'))).toBe(true);
    const [leases] = docs('base/leader-election-role.yaml');
    expect(leases).toMatchObject({ kind: 'Role', rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }] });
    const [argoSecrets] = docs('argocd/secrets-rbac.yaml');
    expect(argoSecrets).toMatchObject({ kind: 'Role', metadata: { namespace: 'argocd' } });
  });

  it('grants the namespaced variant the same rules, as a Role in the watched namespace', () => {
    const [role, binding] = docs('namespaced/role.yaml');
    expect(role).toMatchObject({ kind: 'Role', metadata: { namespace: 'cluster-stacks' } });
    expect(role!['rules']).toEqual(rules);
    expect(binding).toMatchObject({ kind: 'RoleBinding', metadata: { namespace: 'cluster-stacks' }, roleRef: { kind: 'Role', name: role!.metadata.name } });
  });

  it('runs two non-root replicas with a read-only root filesystem, probes and resource requests', () => {
    const [deployment] = docs('base/deployment.yaml') as unknown as [{ spec: { replicas: number; template: { spec: Record<string, any> } } }];
    const pod = deployment.spec.template.spec;
    const container = pod['containers'][0];
    expect(deployment.spec.replicas).toBe(2);
    expect(container.args).toContain('--leader-elect');
    expect(pod['securityContext'].runAsNonRoot).toBe(true);
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(container.volumeMounts.map((mount: { mountPath: string }) => mount.mountPath)).toEqual(['/var/cache/clusterstack', '/tmp']);
  });

  it('ships the Argo CD health checks by including gitops/health, which kustomize loads without flags', () => {
    // Same relative layout as the repository, so the Component's ../../../gitops/health resolves.
    const files = new Map(
      ['deploy/argocd/health/kustomization.yaml', 'gitops/health/kustomization.yaml', 'gitops/health/argocd-cm-health-patch.yaml'].map((file) => [`repo/${file}`, readFileSync(file, 'utf8')]),
    );
    files.set('install/install.yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\n');
    files.set('install/kustomization.yaml', 'resources: [install.yaml]\ncomponents: [../repo/deploy/argocd/health]\n');
    const [configMap] = kustomizeBuild(files, 'install');
    const patch = yaml.load(readFileSync('gitops/health/argocd-cm-health-patch.yaml', 'utf8')) as { data: Record<string, string> };
    expect(configMap!.data).toEqual(patch.data);
  });
});
