// deploy/: the manifests that install the controller say what the controller needs, and no more.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { Controller } from '../../src/controller/controller.js';
import { CAPI_PROVIDER_KINDS } from '../../src/controller/desired-state/watched-kinds.js';
import { kustomizeBuild } from '../support/engine-schemas/kustomize-build.js';

type Doc = { kind: string; metadata: { name: string; namespace?: string }; [key: string]: unknown };
const docs = (file: string): Doc[] => yaml.loadAll(readFileSync(`deploy/${file}`, 'utf8')) as Doc[];
type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
/** `kubectl kustomize <dir>` of this repository's deploy/ variants. */
function built_(dir: string): Record<string, any>[] {
  const run = spawnSync(process.env.KUBECTL ?? 'kubectl', ['kustomize', dir], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${run.stderr}`);
  return (yaml.loadAll(run.stdout) as Record<string, any>[]).filter(Boolean);
}

function allows(rules: Rule[], group: string, resource: string, verb: string): boolean {
  return rules.some(
    (rule) => rule.apiGroups.includes(group) && rule.resources.includes(resource) && rule.verbs.includes(verb),
  );
}

describe('deploy/', () => {
  const [clusterRole] = docs('base/clusterrole.yaml');
  const rules = clusterRole!['rules'] as Rule[];

  it('grants get on every kind whose status it writes: a status patch that meets a 409 is retried on a fresh read', () => {
    const variants = {
      'base/clusterrole.yaml': rules,
      'namespaced/role.yaml': docs('namespaced/role.yaml').flatMap((doc) => (doc['rules'] as Rule[] | undefined) ?? []),
      'layers/rbac.yaml': docs('layers/rbac.yaml').flatMap((doc) => (doc['rules'] as Rule[] | undefined) ?? []),
    };
    for (const [file, granted] of Object.entries(variants)) {
      const statusWrites = granted.flatMap((rule) =>
        rule.verbs.includes('patch')
          ? rule.resources
              .filter((resource) => resource.endsWith('/status'))
              .flatMap((resource) => rule.apiGroups.map((group) => [group, resource.slice(0, -'/status'.length)]))
          : [],
      );
      expect(statusWrites.length, file).toBeGreaterThan(0);
      for (const [group, resource] of statusWrites)
        expect(allows(granted, group!, resource!, 'get'), `${file}: get ${resource}.${group}`).toBe(true);
    }
  });

  it('grants list and watch on every kind the controller watches, and the writes it makes', () => {
    for (const kind of [...Controller.watchedKinds('flux'), ...Controller.watchedKinds('argocd')]) {
      expect(allows(rules, kind.group, kind.plural, 'list'), kind.plural).toBe(true);
      expect(allows(rules, kind.group, kind.plural, 'watch'), kind.plural).toBe(true);
    }
    for (const resource of ['clusterstackreleases', 'clusteraddons'])
      for (const verb of ['get', 'create', 'patch', 'delete'])
        expect(allows(rules, 'clusterstack.x-k8s.io', resource, verb)).toBe(true);
    for (const resource of ['clusterstacks', 'clusterstackreleases', 'clusteraddons'])
      expect(allows(rules, 'clusterstack.x-k8s.io', `${resource}/status`, 'patch')).toBe(true);
    // Cluster API providers: status only, never their spec.
    for (const kind of CAPI_PROVIDER_KINDS) {
      expect(allows(rules, kind.group, `${kind.plural}/status`, 'patch'), kind.plural).toBe(true);
      for (const verb of ['patch', 'update', 'create', 'delete'])
        expect(allows(rules, kind.group, kind.plural, verb), `${kind.plural} ${verb}`).toBe(false);
    }
    expect(allows(rules, 'clusterstack.x-k8s.io', 'clusterstacks', 'delete')).toBe(false);
    expect(allows(rules, '', 'events', 'create')).toBe(true);
    expect(allows(rules, '', 'secrets', 'get')).toBe(false);
    expect(rules.every((rule) => !rule.verbs.includes('*') && !rule.resources.includes('*'))).toBe(true);
    const [leases] = docs('base/leader-election-role.yaml');
    expect(leases).toMatchObject({
      kind: 'Role',
      rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }],
    });
    const [argoSecrets] = docs('argocd/secrets-rbac.yaml');
    expect(argoSecrets).toMatchObject({ kind: 'Role', metadata: { namespace: 'argocd' } });
  });

  it('grants a controller with --layer-root what it reads and writes of AddonsLayers, cluster-wide (deploy/layers)', () => {
    const [layerRole, binding] = docs('layers/rbac.yaml');
    const layerRules = layerRole!['rules'] as Rule[];
    for (const kind of Controller.watchedKinds('flux', { layers: true }).filter((k) => k.group === 'kraan.io')) {
      for (const verb of ['list', 'watch', 'get']) expect(allows(layerRules, kind.group, kind.plural, verb)).toBe(true);
      expect(allows(layerRules, kind.group, `${kind.plural}/status`, 'patch')).toBe(true);
      expect(allows(rules, kind.group, kind.plural, 'list')).toBe(false);
    }
    expect(binding).toMatchObject({
      kind: 'ClusterRoleBinding',
      roleRef: { kind: 'ClusterRole', name: layerRole!.metadata.name },
      subjects: [{ name: 'clusterstack-gitops-controller', namespace: 'clusterstack-system' }],
    });
  });

  it('ships what provider objects name as a ClusterRole bound nowhere: get Secrets, get and list ConfigMaps; the namespaced variant as a bound Role', () => {
    const [role] = docs('base/provider-config-role.yaml');
    expect(role).toMatchObject({ kind: 'ClusterRole', metadata: { name: 'clusterstack-gitops-provider-config' } });
    const providerRules = role!['rules'] as Rule[];
    expect(allows(providerRules, '', 'secrets', 'get')).toBe(true);
    for (const verb of ['list', 'watch', 'create', 'update', 'patch', 'delete'])
      expect(allows(providerRules, '', 'secrets', verb), `secrets ${verb}`).toBe(false);
    for (const verb of ['get', 'list']) expect(allows(providerRules, '', 'configmaps', verb)).toBe(true);
    expect(allows(providerRules, '', 'configmaps', 'watch')).toBe(false);
    expect(providerRules.flatMap((rule) => rule.resources).sort()).toEqual(['configmaps', 'secrets']);
    // Bound by nobody in deploy/: the operator binds it per namespace holding such providers.
    const built = built_('deploy');
    expect(
      built.some(
        (object) => object.kind === 'ClusterRole' && object.metadata.name === 'clusterstack-gitops-provider-config',
      ),
    ).toBe(true);
    expect(
      built.filter(
        (object) => /Binding$/.test(object.kind) && object.roleRef?.name === 'clusterstack-gitops-provider-config',
      ),
    ).toEqual([]);
    const namespaced = built_('deploy/namespaced');
    expect(namespaced.filter((object) => object.kind === 'ClusterRole')).toEqual([]);
    const namespacedRole = namespaced.find(
      (object) => object.kind === 'Role' && object.metadata.name === 'clusterstack-gitops-provider-config',
    )!;
    expect(namespacedRole.metadata.namespace).toBe('cluster-stacks');
    expect(namespacedRole.rules).toEqual(providerRules);
    expect(
      namespaced.find(
        (object) => object.kind === 'RoleBinding' && object.roleRef?.name === 'clusterstack-gitops-provider-config',
      ),
    ).toMatchObject({
      metadata: { namespace: 'cluster-stacks' },
      subjects: [{ name: 'clusterstack-gitops-controller', namespace: 'clusterstack-system' }],
    });
  });

  it('grants the namespaced variant the same rules, as a Role in the watched namespace', () => {
    const [role, binding] = docs('namespaced/role.yaml');
    expect(role).toMatchObject({ kind: 'Role', metadata: { namespace: 'cluster-stacks' } });
    expect(role!['rules']).toEqual(rules);
    expect(binding).toMatchObject({
      kind: 'RoleBinding',
      metadata: { namespace: 'cluster-stacks' },
      roleRef: { kind: 'Role', name: role!.metadata.name },
    });
  });

  it('runs two non-root replicas with a read-only root filesystem, probes and resource requests', () => {
    const [deployment] = docs('base/deployment.yaml') as unknown as [
      { spec: { replicas: number; template: { spec: Record<string, any> } } },
    ];
    const pod = deployment.spec.template.spec;
    const container = pod['containers'][0];
    expect(deployment.spec.replicas).toBe(2);
    expect(container.args).toContain('--leader-elect');
    expect(pod['securityContext'].runAsNonRoot).toBe(true);
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(container.volumeMounts.map((mount: { mountPath: string }) => mount.mountPath)).toEqual([
      '/var/cache/clusterstack',
      '/tmp',
    ]);
  });

  it('ships the Argo CD health checks by including gitops/health, which kustomize loads without flags', () => {
    // Same relative layout as the repository, so the Component's ../../../gitops/health resolves.
    const files = new Map(
      [
        'deploy/argocd/health/kustomization.yaml',
        'gitops/health/kustomization.yaml',
        'gitops/health/argocd-cm-health-patch.yaml',
      ].map((file) => [`repo/${file}`, readFileSync(file, 'utf8')]),
    );
    files.set(
      'install/install.yaml',
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\n',
    );
    files.set('install/kustomization.yaml', 'resources: [install.yaml]\ncomponents: [../repo/deploy/argocd/health]\n');
    const [configMap] = kustomizeBuild(files, 'install');
    const patch = yaml.load(readFileSync('gitops/health/argocd-cm-health-patch.yaml', 'utf8')) as {
      data: Record<string, string>;
    };
    expect(configMap!.data).toEqual(patch.data);
  });
});

describe('deploy/sharded', () => {
  it('runs three leader-elected shards with disjoint selectors and the RBAC of deploy/flux, unchanged', () => {
    const sharded = built_('deploy/sharded');
    const flux = built_('deploy/flux');
    const deployments = sharded.filter((object) => object['kind'] === 'Deployment');
    const shardArgs = deployments.map((deployment) =>
      (deployment['spec'].template.spec.containers[0].args as string[]).filter(
        (arg) => arg.startsWith('--shard') || arg === '--leader-elect',
      ),
    );
    expect(shardArgs).toEqual([
      ['--leader-elect', '--shard=main', '--shard-selector=!sharding.clusterstack.x-k8s.io/key'],
      ['--leader-elect', '--shard=shard1', '--shard-selector=sharding.clusterstack.x-k8s.io/key=shard1'],
      ['--leader-elect', '--shard=shard2', '--shard-selector=sharding.clusterstack.x-k8s.io/key=shard2'],
    ]);
    // One Deployment per shard owns its pods: no two selectors match the same pod.
    expect(
      deployments.map((deployment) => deployment['spec'].selector.matchLabels['clusterstack.x-k8s.io/shard']),
    ).toEqual(['main', 'shard1', 'shard2']);
    for (const deployment of deployments)
      expect(deployment['spec'].template.metadata.labels).toMatchObject(deployment['spec'].selector.matchLabels);
    const rbac = (objects: Record<string, any>[]) => objects.filter((object) => /Role/.test(object['kind'] as string));
    expect(rbac(sharded)).toEqual(rbac(flux));
  });
});
