// Helm hooks for each engine: charts of our own in the shapes of cert-manager (startupapicheck
// post-install Job), ingress-nginx (admission webhook Jobs, RBAC in all four phases), Kyverno
// (pre-delete Job scaling it to zero, a post-upgrade Job, a test Pod) and Argo CD (redis secret
// init pre-install Job, a rollback hook, a test-success Pod), rendered as addon stages. What each
// engine would apply is checked through `kubectl kustomize`, as Flux and Argo CD build directories:
// Flux in the order its Kustomizations' dependsOn gives, Argo CD by its own hook mapping.
import { execFile } from 'node:child_process';
import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { renderPullRequestBody } from '../gitops/pull-request-body.js';
import { ARGOCD_HOOK_PHASES, argoCdHookHandling } from '../gitops/wiring/argocd-hook-phases.js';
import { renderWiring, type WiringOptions } from '../gitops/wiring/render-wiring.js';
import type { KubeObject } from '../src/api/types.js';
import type { HelmHookRecord } from '../src/output/helm-hooks-record.js';
import type { UnitRecord } from '../src/output/provenance.js';
import { type PublishedState, readPublishedState } from '../src/output/published-state.js';
import { placeHelmHooks, readHelmHook } from '../src/render/helm-hooks.js';
import { unitsWithMisplacedHooks } from '../src/render/previous-hook-layout.js';
import { decodeYamlDocument, splitYamlDocuments } from '../src/yaml/kube-yaml.js';
import { FLUX_SCHEMAS } from './support/engine-schemas/flux-schemas.js';
import { KUSTOMIZE_SCHEMAS } from './support/engine-schemas/kubernetes-schemas.js';
import { kustomizationProblems, schemaProblems } from './support/engine-schemas/wiring-checks.js';
import {
  clusterYaml,
  copyExampleReleases,
  FERROL_STACK_YAML,
  readTree,
  runClusterstack,
  tempDir,
  writeTree,
} from './support/cli.js';

const run = promisify(execFile);
const CHARTS = path.resolve('test/fixtures/charts/hook-heavy-addons');
const STAGES = ['cert-manager', 'ingress-nginx', 'kyverno', 'argo-cd'];
const CLUSTER_DIR = 'clusters/cluster-stacks/one';
/** What helm runs only on delete, rollback or test: no engine may apply these at install. */
const NEVER_AT_INSTALL = [
  'kyverno-remove-configmap',
  'kyverno-scale-to-zero',
  'kyverno-admission-controller-liveness',
  'argocd-rollback-note',
  'argocd-test-connection',
];

function anObject(kind: string, name: string, annotations?: Record<string, string>): KubeObject {
  return {
    apiVersion: kind === 'Job' ? 'batch/v1' : 'v1',
    kind,
    metadata: { name, namespace: 'kube-system', ...(annotations ? { annotations } : {}) },
  };
}

async function hookRelease(): Promise<string> {
  const releases = await copyExampleReleases();
  const v2 = path.join(releases, 'docker-ferrol-1-30-v2');
  await rm(path.join(v2, 'docker-ferrol-1-30-cluster-addon-v2.tgz'));
  await cp(CHARTS, path.join(v2, 'docker-ferrol-1-30-cluster-addon-v2'), { recursive: true });
  await writeFile(
    path.join(v2, 'clusteraddon.yaml'),
    `apiVersion: clusteraddonconfig.x-k8s.io/v1alpha1\nclusterAddonVersion: clusteraddons.clusterstack.x-k8s.io/v1alpha1\naddonStages:\n  AfterControlPlaneInitialized:\n${STAGES.map((stage) => `    - {name: ${stage}, action: apply}\n`).join('')}`,
  );
  return releases;
}

/** `kind/name` of every object `kubectl kustomize` builds from a directory. */
async function kustomize(dir: string): Promise<KubeObject[]> {
  const { stdout } = await run('kubectl', ['kustomize', dir]);
  return splitYamlDocuments(stdout)
    .map((document) => decodeYamlDocument(document.text).value as KubeObject)
    .filter((object) => object !== null);
}

async function renderHooks(engine: 'flux' | 'argocd', out: string, releases: string): Promise<Record<string, any>> {
  const inputs = await writeTree({
    'inputs.yaml':
      FERROL_STACK_YAML.replace('versions: [v1]', 'versions: [v2]') + clusterYaml('one', 'docker-ferrol-1-30-v2'),
  });
  const result = await runClusterstack([
    'render',
    inputs,
    '--release-source',
    releases,
    '--output',
    out,
    '--gitops',
    engine,
    '--gitops-url',
    'https://git.example.test/fleet.git',
    '--json',
  ]);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout) as Record<string, any>;
}

describe('readHelmHook and placeHelmHooks', () => {
  it('reads events as helm does (trimmed, lower case), the weight as strconv.Atoi, 0 when it is no integer', () => {
    expect(
      readHelmHook(
        anObject('Job', 'a', {
          'helm.sh/hook': ' Pre-Install , post-upgrade',
          'helm.sh/hook-weight': '-5',
          'helm.sh/hook-delete-policy': 'hook-succeeded, before-hook-creation',
        }),
      ),
    ).toEqual({
      events: ['pre-install', 'post-upgrade'],
      weight: -5,
      deletePolicies: ['hook-succeeded', 'before-hook-creation'],
      unknownEvents: [],
    });
    expect(
      readHelmHook(anObject('Job', 'b', { 'helm.sh/hook': 'post-install', 'helm.sh/hook-weight': 'high' }))?.weight,
    ).toBe(0);
    expect(readHelmHook(anObject('Job', 'c', { other: 'x' }))).toBeUndefined();
  });

  it('staged: orders install hooks by phase and weight, leaves out delete, rollback, test and unknown hooks, names ordinary objects as before', () => {
    const objects = [
      anObject('ConfigMap', 'plain'),
      anObject('Job', 'migrate', { 'helm.sh/hook': 'pre-install,pre-upgrade', 'helm.sh/hook-weight': '-5' }),
      anObject('Job', 'check', { 'helm.sh/hook': 'post-install' }),
      anObject('ServiceAccount', 'both', { 'helm.sh/hook': 'pre-install,post-install' }),
      anObject('Job', 'scale-to-zero', { 'helm.sh/hook': 'pre-delete' }),
      anObject('Pod', 'test', { 'helm.sh/hook': 'test' }),
      anObject('Job', 'old', { 'helm.sh/hook': 'crd-install' }),
    ];
    const placed = placeHelmHooks(objects, 'kube-system', undefined);
    expect(placed.files).toEqual([
      'configmap-plain.yaml',
      'helm-hooks/pre-w-5/job-migrate.yaml',
      'helm-hooks/post-w0/job-check.yaml',
      'helm-hooks/pre-w0/serviceaccount-both.yaml',
      undefined,
      undefined,
      undefined,
    ]);
    expect(placed.hooks.map((hook) => [hook.name, hook.decision])).toEqual([
      ['migrate', 'before'],
      ['check', 'after'],
      ['both', 'before'],
      ['scale-to-zero', 'dropped'],
      ['test', 'dropped'],
      ['old', 'dropped'],
    ]);
    expect(placed.hooks.find((hook) => hook.name === 'scale-to-zero')?.reason).toMatch(
      /only on delete \(pre-delete\), never at install: left out/,
    );
    expect(placed.hooks.find((hook) => hook.name === 'old')?.reason).toMatch(/hook it does not know \(crd-install\)/);
    expect(placeHelmHooks([anObject('ConfigMap', 'plain')], 'kube-system', undefined)).toEqual({
      files: ['configmap-plain.yaml'],
      hooks: [],
    });
  });

  it('argocd: writes every hook in place and records what Argo CD does with it', () => {
    const objects = [
      anObject('Job', 'migrate', { 'helm.sh/hook': 'pre-upgrade' }),
      anObject('Job', 'check', { 'helm.sh/hook': 'post-install' }),
      anObject('Job', 'scale-to-zero', { 'helm.sh/hook': 'pre-delete' }),
      anObject('Pod', 'test', { 'helm.sh/hook': 'test' }),
      anObject('Job', 'sync', { 'helm.sh/hook': 'post-install', 'argocd.argoproj.io/hook': 'Sync' }),
    ];
    const placed = placeHelmHooks(objects, 'kube-system', ARGOCD_HOOK_PHASES);
    expect(placed.files).toEqual([
      'job-migrate.yaml',
      'job-check.yaml',
      'job-scale-to-zero.yaml',
      'pod-test.yaml',
      'job-sync.yaml',
    ]);
    expect(placed.hooks.map((hook) => hook.decision)).toEqual([
      'before',
      'after',
      'on-delete',
      'never',
      'with-objects',
    ]);
  });
});

describe('argoCdHookHandling (gitops-engine hook.go, helm/type.go, sync_phase.go)', () => {
  it('runs install hooks in PreSync and PostSync, delete hooks only on deletion, test and rollback hooks never', () => {
    expect(argoCdHookHandling({ 'helm.sh/hook': 'pre-install,pre-upgrade' })).toEqual({
      hook: true,
      types: ['PreSync'],
      syncPhases: ['PreSync'],
    });
    expect(argoCdHookHandling({ 'helm.sh/hook': 'post-install' }).syncPhases).toEqual(['PostSync']);
    expect(argoCdHookHandling({ 'helm.sh/hook': 'pre-delete' })).toEqual({
      hook: true,
      types: ['PreDelete'],
      syncPhases: [],
    });
    expect(argoCdHookHandling({ 'helm.sh/hook': 'test' })).toEqual({ hook: true, types: [], syncPhases: [] });
    expect(argoCdHookHandling({ 'helm.sh/hook': 'pre-rollback' }).syncPhases).toEqual([]);
    expect(argoCdHookHandling({ 'helm.sh/hook': 'crd-install' })).toEqual({
      hook: false,
      types: [],
      syncPhases: ['Sync'],
    });
    expect(argoCdHookHandling(undefined).syncPhases).toEqual(['Sync']);
    // Argo CD's own annotation wins over helm's.
    expect(argoCdHookHandling({ 'helm.sh/hook': 'test', 'argocd.argoproj.io/hook': 'PostSync' }).syncPhases).toEqual([
      'PostSync',
    ]);
    expect(argoCdHookHandling({ 'argocd.argoproj.io/hook': 'Skip' })).toEqual({
      hook: false,
      types: ['Skip'],
      syncPhases: [],
    });
  });
});

describe('unitsWithMisplacedHooks', () => {
  const unit = (dir: string, hooks: boolean): UnitRecord => ({
    dir,
    kind: 'cluster-stage',
    namespace: 'n',
    name: 'c',
    release: 'r',
    inputDigest: 'i',
    renderDigest: 'r',
    files: ['job.yaml'],
    ...(hooks
      ? {
          hooks: [
            {
              apiVersion: 'batch/v1',
              kind: 'Job',
              name: 'j',
              events: ['post-install'],
              weight: 0,
              deletePolicies: [],
              decision: 'after',
              file: 'helm-hooks/post-w0/job.yaml',
              reason: '',
            },
          ],
        }
      : {}),
  });
  const units = [unit('a', true), unit('b', false)];

  it('keeps every unit when the tree was laid out for the same engine, re-renders units with hooks when for another', () => {
    const tree = (helmHooks?: string): PublishedState =>
      readPublishedState(
        new Map([
          ['provenance.json', JSON.stringify({ units, ...(helmHooks ? { helmHooks } : {}) })],
          ['a/job.yaml', 'kind: Job\n'],
          ['b/job.yaml', 'metadata: {annotations: {helm.sh/hook: test}}\n'],
        ]),
      );
    expect(unitsWithMisplacedHooks(tree('staged'), 'staged')).toEqual(new Set());
    expect(unitsWithMisplacedHooks(tree('staged'), 'argocd')).toEqual(new Set(['a']));
    // Written before hooks were handled: units whose files hold a hook render again.
    expect(unitsWithMisplacedHooks(tree(), 'staged')).toEqual(new Set(['b']));
  });
});

describe('hook wiring', () => {
  const hook = (name: string, decision: HelmHookRecord['decision'], file?: string, weight = 0): HelmHookRecord => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    namespace: 'kube-system',
    name,
    events: ['post-install'],
    weight,
    deletePolicies: [],
    decision,
    ...(file ? { file } : {}),
    reason: 'r',
  });
  const stage = (name: string, order: number, hooks?: HelmHookRecord[]): UnitRecord => ({
    dir: `clusters/cs/a/${name}`,
    kind: 'cluster-stage',
    namespace: 'cs',
    name: 'a',
    release: 'docker-ferrol-1-30-v2',
    stage: name,
    order,
    inputDigest: 'i',
    renderDigest: 'r',
    files: [],
    ...(hooks ? { hooks } : {}),
  });
  const options = (engine: 'flux' | 'argocd'): WiringOptions => ({
    engine,
    name: 'fleet',
    namespace: engine === 'flux' ? 'flux-system' : 'argocd',
    source: { kind: 'git', url: 'https://git.example.test/fleet.git', branch: 'main', path: '' },
  });
  const staged = [
    stage('cni', 0, [
      hook('pre', 'before', 'helm-hooks/pre-w-1/job-pre.yaml', -1),
      hook('check', 'after', 'helm-hooks/post-w2/job-check.yaml', 2),
      hook('gone', 'dropped'),
    ]),
    stage('csi', 1),
  ];

  it('Flux: chains the hook Kustomizations around their stage, and the next stage waits for the last post hook; all conform to Flux’s schema', () => {
    const files = renderWiring(staged, options('flux'));
    const spec = (file: string): Record<string, any> =>
      (decodeYamlDocument(files.get(file)!).value as { spec: Record<string, any> }).spec;
    expect(spec('flux/clusters/cs/a/cni/helm-hooks/pre-w-1.yaml')).toMatchObject({
      path: './clusters/cs/a/cni/helm-hooks/pre-w-1',
      force: true,
      wait: true,
      prune: true,
    });
    expect(spec('flux/clusters/cs/a/cni/helm-hooks/pre-w-1.yaml').dependsOn).toBeUndefined();
    expect(spec('flux/clusters/cs/a/cni.yaml').dependsOn).toEqual([{ name: 'a-cni-pre-hooks-w-1', namespace: 'cs' }]);
    expect(spec('flux/clusters/cs/a/cni/helm-hooks/post-w2.yaml').dependsOn).toEqual([
      { name: 'a-cni', namespace: 'cs' },
    ]);
    expect(spec('flux/clusters/cs/a/csi.yaml').dependsOn).toEqual([{ name: 'a-cni-post-hooks-w2', namespace: 'cs' }]);
    expect(schemaProblems(files, [...FLUX_SCHEMAS, ...KUSTOMIZE_SCHEMAS])).toEqual([]);
    expect(kustomizationProblems(files)).toEqual([]);
  });

  it('refuses to wire hooks laid out for the other engine (a bug, never a user error)', () => {
    expect(() => renderWiring([stage('cni', 0, [hook('test', 'never', 'pod-test.yaml')])], options('flux'))).toThrow(
      /laid out for Argo CD/,
    );
    expect(() => renderWiring(staged, options('argocd'))).toThrow(/not left for Argo CD to map/);
    expect(
      renderWiring([stage('cni', 0, [hook('test', 'never', 'pod-test.yaml')])], options('argocd')).size,
    ).toBeGreaterThan(0);
  });

  it('lists the hooks of the units a pull request changes, naming a few units and counting the rest', () => {
    const units = ['a', 'b', 'c', 'd', 'e'].map((cluster) => `clusters/cs/${cluster}/cni`);
    const summary = {
      inputDigest: 'sha256:x',
      stacks: [],
      clusters: [],
      withheld: [],
      notes: [],
      helmHooks: [
        {
          object: 'Job kube-system/scale-to-zero',
          events: 'pre-delete',
          weight: 0,
          deletePolicy: '-',
          decision: 'dropped' as const,
          where: '-',
          reason: 'helm runs it only on delete',
          units,
        },
      ],
    };
    const changes = {
      releases: [],
      clusters: ['a', 'b', 'c', 'd'].map((cluster) => ({
        namespace: 'cs',
        cluster,
        change: 'updated' as const,
        stages: ['cni'],
      })),
      withheld: [],
      otherFiles: [],
    };
    const body = renderPullRequestBody(changes, summary);
    expect(body).toContain('## Helm hooks');
    expect(body).toContain(
      '| Job kube-system/scale-to-zero | pre-delete (0) | dropped | - | helm runs it only on delete | `clusters/cs/a/cni`, `clusters/cs/b/cni`, `clusters/cs/c/cni` and 1 more |',
    );
    expect(renderPullRequestBody({ ...changes, clusters: [] }, summary)).not.toContain('## Helm hooks');
  });
});

describe('helm hooks of hook-heavy charts (real helm, kubectl kustomize)', () => {
  let releases: string;
  beforeAll(async () => {
    releases = await hookRelease();
  });

  it('Flux: applies pre-install hooks before their stage in weight order, post-install hooks after it, and never a delete, rollback or test hook', async () => {
    const out = path.join(await tempDir(), 'out');
    const report = await renderHooks('flux', out, releases);
    const root = path.join(out, 'current');
    const tree = await readTree(root);

    // The Flux Kustomizations of the cluster, in an order their dependsOn allows (ties by name).
    const kustomizations = Object.entries(tree)
      .filter(([file]) => file.startsWith(`flux/${CLUSTER_DIR}/`) && !file.endsWith('/kustomization.yaml'))
      .map(
        ([, text]) =>
          decodeYamlDocument(text).value as KubeObject & {
            spec: { path: string; dependsOn?: { name: string }[]; force?: boolean; wait?: boolean };
          },
      );
    const order: typeof kustomizations = [];
    const pending = [...kustomizations].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
    while (pending.length > 0) {
      const next = pending.findIndex((k) =>
        (k.spec.dependsOn ?? []).every((dependency) => order.some((done) => done.metadata.name === dependency.name)),
      );
      expect(next, 'every dependsOn names a Kustomization of the cluster, without cycles').toBeGreaterThanOrEqual(0);
      order.push(...pending.splice(next, 1));
    }
    const applied: string[] = [];
    for (const kustomization of order)
      for (const object of await kustomize(path.join(root, kustomization.spec.path)))
        applied.push(`${kustomization.metadata.name}: ${object.kind}/${object.metadata.name}`);

    const at = (object: string): number => applied.findIndex((line) => line.endsWith(` ${object}`));
    for (const name of NEVER_AT_INSTALL)
      expect(
        applied.filter((line) => line.includes(name)),
        name,
      ).toEqual([]);
    // cert-manager: its objects, then the check's RBAC (weight -5), then the check Job (weight 1).
    expect(at('Deployment/cert-manager-webhook')).toBeLessThan(at('Role/cert-manager-startupapicheck:create-cert'));
    expect(at('RoleBinding/cert-manager-startupapicheck:create-cert')).toBeLessThan(
      at('Job/cert-manager-startupapicheck'),
    );
    // ingress-nginx: RBAC and the create Job, the webhook, then the patch Job; after cert-manager's whole install.
    expect(at('Job/cert-manager-startupapicheck')).toBeLessThan(at('ClusterRole/ingress-nginx-admission'));
    expect(at('Job/ingress-nginx-admission-create')).toBeLessThan(
      at('ValidatingWebhookConfiguration/ingress-nginx-admission'),
    );
    expect(at('ValidatingWebhookConfiguration/ingress-nginx-admission')).toBeLessThan(
      at('Job/ingress-nginx-admission-patch'),
    );
    expect(applied.filter((line) => line.endsWith('ServiceAccount/ingress-nginx-admission'))).toHaveLength(1);
    // argo-cd: RBAC (weight -10) before the init Job (weight 0) before the server.
    expect(at('Role/argocd-redis-secret-init')).toBeLessThan(at('Job/argocd-redis-secret-init'));
    expect(at('Job/argocd-redis-secret-init')).toBeLessThan(at('Service/argocd-server'));
    expect(applied[0]).toMatch(/^one-cert-manager: /);

    const hookKustomization = kustomizations.find((k) => k.metadata.name === 'one-ingress-nginx-pre-hooks-w0')!;
    expect(hookKustomization.spec).toMatchObject({
      path: `./${CLUSTER_DIR}/ingress-nginx/helm-hooks/pre-w0`,
      prune: true,
      wait: true,
      force: true,
      dependsOn: [{ name: 'one-cert-manager-post-hooks-w1' }],
      kubeConfig: { secretRef: { name: 'one-kubeconfig' } },
    });
    expect(kustomizations.find((k) => k.metadata.name === 'one-ingress-nginx')!.spec.dependsOn).toEqual([
      { name: 'one-cert-manager-post-hooks-w1', namespace: 'cluster-stacks' },
      { name: 'one-ingress-nginx-pre-hooks-w0', namespace: 'cluster-stacks' },
    ]);

    // The stage's own directory holds no hook; a whole cluster built at once holds none either.
    expect(
      (await kustomize(path.join(root, CLUSTER_DIR))).filter((object) => object.metadata.annotations?.['helm.sh/hook']),
    ).toEqual([]);

    // Reported per object: --json, provenance, README.
    const dropped = (report.helmHooks as { unit: string; name: string; decision: string; reason: string }[])
      .filter((hook) => hook.decision === 'dropped')
      .map((hook) => hook.name)
      .sort();
    expect(dropped).toEqual([...NEVER_AT_INSTALL].sort());
    expect(report.helmHooks).toContainEqual(
      expect.objectContaining({
        unit: `${CLUSTER_DIR}/kyverno`,
        kind: 'Job',
        name: 'kyverno-clean-reports',
        decision: 'after',
        file: 'helm-hooks/post-w0/job-kyverno-clean-reports.yaml',
        reason: expect.stringMatching(/at upgrade only/),
      }),
    );
    expect(JSON.parse(tree['provenance.json']!).helmHooks).toBe('staged');
    expect(tree['README.md']).toMatch(/## Helm hooks/);
    expect(tree['README.md']).toMatch(
      /\| Job kube-system\/kyverno-scale-to-zero \| pre-delete \(100\) \| hook-succeeded,hook-failed \| dropped \| - \| helm runs it only on delete \(pre-delete\), never at install: left out \| clusters\/cluster-stacks\/one\/kyverno \|/,
    );
  });

  it('Argo CD: keeps every hook in its stage with helm’s annotations, which Argo CD maps so that only install hooks run in a sync; switching engines lays the hooks out again', async () => {
    const out = path.join(await tempDir(), 'out');
    await renderHooks('flux', out, releases);
    const report = await renderHooks('argocd', out, releases);
    const root = path.join(out, 'current');
    const tree = await readTree(root);
    expect(Object.keys(tree).filter((file) => file.includes('/helm-hooks/'))).toEqual([]);

    const phases = new Map<string, string[]>();
    for (const stage of STAGES)
      for (const object of await kustomize(path.join(root, CLUSTER_DIR, stage)))
        phases.set(object.metadata.name, argoCdHookHandling(object.metadata.annotations).syncPhases);
    for (const name of NEVER_AT_INSTALL) expect(phases.get(name), name).toEqual([]);
    expect(phases.get('ingress-nginx-admission-create')).toEqual(['PreSync']);
    expect(phases.get('argocd-redis-secret-init')).toEqual(['PreSync']);
    expect(phases.get('ingress-nginx-admission-patch')).toEqual(['PostSync']);
    expect(phases.get('cert-manager-startupapicheck')).toEqual(['PostSync']);
    expect(phases.get('kyverno-admission-controller')).toEqual(['Sync']);
    expect(await readFile(path.join(root, CLUSTER_DIR, 'kyverno', 'job-kyverno-scale-to-zero.yaml'), 'utf8')).toMatch(
      /helm.sh\/hook: pre-delete/,
    );

    const decisions = Object.fromEntries(
      (report.helmHooks as { name: string; decision: string }[]).map((hook) => [hook.name, hook.decision]),
    );
    expect(decisions).toMatchObject({
      'kyverno-scale-to-zero': 'on-delete',
      'kyverno-admission-controller-liveness': 'never',
      'argocd-test-connection': 'never',
      'argocd-rollback-note': 'never',
      'ingress-nginx-admission-create': 'before',
      'cert-manager-startupapicheck': 'after',
    });
    expect(JSON.parse(tree['provenance.json']!).helmHooks).toBe('argocd');
  });
});
