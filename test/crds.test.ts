import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as yaml from 'js-yaml';
import * as cel from '@marcbachmann/cel-js';
import { describe, expect, it } from 'vitest';
import { CHANNEL_CEL_RULE, MAX_VERSIONS, VERSIONS_CHANNEL_CEL_RULE } from '../src/api/channel-rules.js';
import { validateClusterStack } from '../src/api/validate.js';
import {
  API_GROUP as GROUP,
  API_VERSION,
  API_VERSION_NAME as VERSION,
  type ClusterAddon,
  type ClusterStack,
  type ClusterStackRelease,
} from '../src/api/types.js';
import {
  celRules,
  compareWithType,
  crdAdmission,
  type CustomResourceDefinition,
  defaultProblems,
  isTransitionRule,
  loadCrd,
  pruneUnknownFields,
  resolveColumnPath,
  schemaAt,
  structuralProblems,
  transitionRuleGap,
  TypeSource,
  versionSchema,
} from './support/crd-schema.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CRD_DIR = join(ROOT, 'crds');
const EXAMPLES_DIR = join(ROOT, 'examples');
const QUICKSTART_DIR = join(EXAMPLES_DIR, 'quickstart');

const KINDS = [
  { kind: 'ClusterStack', plural: 'clusterstacks', shortName: 'csk' },
  { kind: 'ClusterStackRelease', plural: 'clusterstackreleases', shortName: 'cskr' },
  { kind: 'ClusterAddon', plural: 'clusteraddons', shortName: 'caddon' },
] as const;
type Kind = (typeof KINDS)[number]['kind'];

const crds = Object.fromEntries(
  KINDS.map(({ kind, plural }) => [kind, loadCrd(join(CRD_DIR, `${GROUP}_${plural}.yaml`))]),
) as Record<Kind, CustomResourceDefinition>;

/** Admission as the API server does it: unknown fields pruned, defaults applied, schema checked. */
const admit = (kind: Kind) => crdAdmission(crds[kind], VERSION);
/** Like admit, but unknown fields are errors: what our own spec checks should do. */
const lint = (kind: Kind) => crdAdmission(crds[kind], VERSION, { rejectUnknownFields: true });

// ---------------------------------------------------------------------------------------------
// Builders

type DeepPartial<T> = { [K in keyof T]?: T[K] extends Array<infer U> ? Array<DeepPartial<U>> : T[K] extends object ? DeepPartial<T[K]> : T[K] };

function aClusterStack(spec: Record<string, unknown> = {}, rest: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: API_VERSION,
    kind: 'ClusterStack',
    metadata: { name: 'docker-ferrol-1-30', namespace: 'cluster-stacks' },
    spec: { provider: 'docker', name: 'ferrol', kubernetesVersion: '1.30', noProvider: true, ...spec },
    ...rest,
  };
}

function aReadyCondition(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'Ready', status: 'True', lastTransitionTime: '2024-05-06T07:08:09Z', ...overrides };
}

function withoutField(object: Record<string, unknown>, field: string): Record<string, unknown> {
  const spec = { ...(object.spec as Record<string, unknown>) };
  delete spec[field];
  return { ...object, spec };
}

// A ClusterStack spec in the shape of CSO's documentation, as a user would write it.
const CSO_STYLE_CLUSTERSTACK = `
apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata:
  name: clusterstack
  namespace: cluster
spec:
  provider: docker
  name: ferrol
  kubernetesVersion: "1.27"
  channel: stable
  autoSubscribe: false
  versions:
    - v1
    - v2
  providerRef:
    apiVersion: infrastructure.clusterstack.x-k8s.io/v1alpha1
    kind: DockerClusterStackReleaseTemplate
    name: cspotemplate
`;

// Objects with every field of the types filled in, typed against them so they stay realistic. The
// field-by-field comparison with src/api/types.ts is in 'the CRD schemas and src/api/types.ts'.
const fullClusterStack: DeepPartial<ClusterStack> = {
  apiVersion: API_VERSION,
  kind: 'ClusterStack',
  metadata: { name: 'openstack-scs-1-32', namespace: 'cluster-stacks', generation: 3 },
  spec: {
    provider: 'openstack',
    name: 'scs',
    kubernetesVersion: '1.32',
    channel: 'alpha',
    versions: ['v1-alpha.5', 'v2-alpha.0'],
    autoSubscribe: false,
    noProvider: false,
    providerRef: {
      apiVersion: 'infrastructure.clusterstack.x-k8s.io/v1alpha1',
      kind: 'OpenStackClusterStackReleaseTemplate',
      name: 'scs-images',
      namespace: 'cluster-stacks',
      uid: '0b8c5a8e-2f4e-4a53-9d1e-3f2a7c1d9e11',
      resourceVersion: '1234',
      fieldPath: 'spec.template',
    },
    releaseSource: 'oci://registry.scs.community/kaas/cluster-stacks',
    addonValues: { cilium: { hubble: { enabled: true } }, replicas: 2 },
    addonStageValues: { cni: { ipam: { mode: 'kubernetes' } }, 'metrics-server': {} },
  },
  status: {
    latestRelease: 'openstack-scs-1-32-v2-alpha-0',
    usableVersions: 'v1-alpha.5, v2-alpha.0',
    summary: [
      { name: 'openstack-scs-1-32-v1-alpha-5', ready: true, phase: 'done' },
      { name: 'openstack-scs-1-32-v2-alpha-0', ready: false, phase: 'provider-specific work', message: 'waiting for node images' },
    ],
    conditions: [
      {
        type: 'Ready',
        status: 'False',
        severity: 'Info',
        reason: 'ReleasesNotReady',
        message: '1 of 2 releases ready',
        lastTransitionTime: '2024-05-06T07:08:09Z',
        observedGeneration: 3,
      },
    ],
    observedGeneration: 3,
  },
};

const fullClusterStackRelease: DeepPartial<ClusterStackRelease> = {
  apiVersion: API_VERSION,
  kind: 'ClusterStackRelease',
  metadata: { name: 'docker-ferrol-1-27-v3', namespace: 'cluster' },
  spec: {
    providerRef: { apiVersion: 'infrastructure.clusterstack.x-k8s.io/v1alpha1', kind: 'DockerClusterStackRelease', name: 'docker-ferrol-1-27-v3' },
  },
  status: {
    kubernetesVersion: '1.27.3',
    ready: true,
    resources: [
      { group: 'cluster.x-k8s.io', version: 'v1beta1', kind: 'ClusterClass', namespace: 'cluster', name: 'docker-ferrol-1-27-v3', status: 'synced' },
      { version: 'v1', kind: 'ConfigMap', namespace: 'cluster', name: 'values', status: 'not-synced', error: 'Application is OutOfSync' },
      { kind: 'Namespace', name: 'cluster', status: '' },
    ],
    conditions: [
      { type: 'ManifestsPublished', status: 'True', reason: 'Published', message: 'published at 3f2a7c1', lastTransitionTime: '2024-05-06T07:08:09.123Z' },
      { type: 'Ready', status: 'True', lastTransitionTime: '2024-05-06T07:08:09+02:00', observedGeneration: 1 },
    ],
    observedGeneration: 1,
  },
};

const fullClusterAddon: DeepPartial<ClusterAddon> = {
  apiVersion: API_VERSION,
  kind: 'ClusterAddon',
  metadata: { name: 'cluster-addon-bravo', namespace: 'cluster-stacks' },
  spec: {
    clusterRef: { apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'Cluster', name: 'bravo', namespace: 'cluster-stacks' },
    clusterStack: 'docker-ferrol-1-30-v2',
    version: 'v2',
    hook: 'AfterControlPlaneInitialized',
  },
  status: {
    resources: [{ group: 'apps', version: 'v1', kind: 'Deployment', namespace: 'kube-system', name: 'metrics-server', status: 'synced' }],
    stages: [
      { name: 'cni', action: 'apply', phase: 'done', synced: true },
      { name: 'metrics-server', action: 'delete', phase: 'waiting for precondition', synced: false },
    ],
    hooks: [{ name: 'AfterControlPlaneInitialized', release: 'docker-ferrol-1-30-v2', outcome: 'Succeeded', message: 'addons of release docker-ferrol-1-30-v2 are applied and healthy', since: '2024-05-06T07:08:09.123Z' }],
    ready: false,
    conditions: [{ type: 'Ready', status: 'Unknown', severity: '', lastTransitionTime: '2024-05-06T07:08:09Z' }],
    observedGeneration: 2,
  },
};

// ---------------------------------------------------------------------------------------------

describe.each(KINDS.map((k) => [k.kind, k] as const))('%s CRD, like every CRD of ours,', (kind, { plural, shortName }) => {
  const crd = crds[kind];
  const schema = versionSchema(crd, VERSION);

  it('is a namespaced apiextensions.k8s.io/v1 CRD serving and storing v1alpha1', () => {
    expect(crd.apiVersion).toBe('apiextensions.k8s.io/v1');
    expect(crd.metadata.name).toBe(`${plural}.${GROUP}`);
    expect(crd.spec.group).toBe(GROUP);
    expect(crd.spec.scope).toBe('Namespaced');
    expect(crd.spec.names).toMatchObject({ kind, listKind: `${kind}List`, plural, singular: kind.toLowerCase() });
    expect(crd.spec.versions.map((v) => [v.name, v.served, v.storage])).toEqual([[VERSION, true, true]]);
  });

  it(`has the short name ${shortName} and the categories cluster-api and cluster-stacks (not clusterstack: kubectl would expand that category where the singular is meant)`, () => {
    expect(crd.spec.names.shortNames).toEqual([shortName]);
    expect(crd.spec.names.categories).toEqual(['cluster-api', 'cluster-stacks']);
  });

  it('carries the provider label and the Cluster API contract label for v1alpha1', () => {
    expect(crd.metadata.labels).toMatchObject({
      'cluster.x-k8s.io/provider': 'clusterstack-gitops',
      'cluster.x-k8s.io/v1beta1': VERSION,
    });
  });

  it('has the status subresource', () => {
    expect(crd.spec.versions[0]?.subresources).toEqual({ status: {} });
  });

  it('has a structural schema', () => {
    expect(structuralProblems(schema)).toEqual([]);
  });

  it('has defaults that are valid against their own schema', () => {
    expect(defaultProblems(schema)).toEqual([]);
  });

  it('has printer columns whose jsonPaths exist in the schema with the column type', () => {
    const columnTypes: Record<string, string[]> = {
      string: ['string'], boolean: ['boolean'], integer: ['integer'], number: ['number', 'integer'], date: ['date-time'],
    };
    const problems = (crd.spec.versions[0]?.additionalPrinterColumns ?? []).flatMap((column) => {
      const resolved = resolveColumnPath(schema, column.jsonPath);
      if ('problem' in resolved) return [`${column.name}: ${resolved.problem}`];
      return columnTypes[column.type]?.includes(resolved.type) ? [] : [`${column.name}: column type ${column.type}, schema type ${resolved.type}`];
    });
    expect(problems).toEqual([]);
  });

  it('ends its columns with Age and the Ready condition reason and message', () => {
    const columns = crd.spec.versions[0]?.additionalPrinterColumns ?? [];
    expect(columns.slice(-3).map((c) => [c.name, c.jsonPath])).toEqual([
      ['Age', '.metadata.creationTimestamp'],
      ['Reason', ".status.conditions[?(@.type=='Ready')].reason"],
      ['Message', ".status.conditions[?(@.type=='Ready')].message"],
    ]);
  });

  it('gives the conditions the Cluster API shape', () => {
    const condition = schemaAt(schema, '.status.conditions[*]');
    expect(condition?.required?.sort()).toEqual(['lastTransitionTime', 'status', 'type']);
    expect(condition?.properties?.status?.enum).toEqual(['True', 'False', 'Unknown']);
    expect(condition?.properties?.lastTransitionTime).toMatchObject({ type: 'string', format: 'date-time' });
    expect(Object.keys(condition?.properties ?? {}).sort()).toEqual(
      ['lastTransitionTime', 'message', 'observedGeneration', 'reason', 'severity', 'status', 'type'],
    );
  });

  it('puts every transition rule on a field that is always present (required or defaulted)', () => {
    const gaps = celRules(schema)
      .filter(isTransitionRule)
      .map((rule) => transitionRuleGap(rule.node))
      .filter((gap) => gap !== undefined);
    expect(gaps).toEqual([]);
  });
});

describe('the CRD schemas and src/api/types.ts', () => {
  const types = new TypeSource(join(ROOT, 'src', 'api', 'types.ts'));
  const serverSet = { serverSet: ['apiVersion', 'kind', 'metadata'] };

  // Which interface each schema node mirrors.
  const mapping: Array<[Kind, string, string]> = [
    ['ClusterStack', '', 'ClusterStack'],
    ['ClusterStack', '.spec', 'ClusterStackSpec'],
    ['ClusterStack', '.spec.providerRef', 'ObjectReference'],
    ['ClusterStack', '.status', 'ClusterStackStatus'],
    ['ClusterStack', '.status.summary[*]', 'ClusterStackReleaseSummary'],
    ['ClusterStack', '.status.conditions[*]', 'Condition'],
    ['ClusterStackRelease', '', 'ClusterStackRelease'],
    ['ClusterStackRelease', '.spec', 'ClusterStackReleaseSpec'],
    ['ClusterStackRelease', '.spec.providerRef', 'ObjectReference'],
    ['ClusterStackRelease', '.status', 'ClusterStackReleaseStatus'],
    ['ClusterStackRelease', '.status.resources[*]', 'ResourceStatus'],
    ['ClusterStackRelease', '.status.conditions[*]', 'Condition'],
    ['ClusterAddon', '', 'ClusterAddon'],
    ['ClusterAddon', '.spec', 'ClusterAddonSpec'],
    ['ClusterAddon', '.spec.clusterRef', 'ObjectReference'],
    ['ClusterAddon', '.status', 'ClusterAddonStatus'],
    ['ClusterAddon', '.status.resources[*]', 'ResourceStatus'],
    ['ClusterAddon', '.status.stages[*]', 'ClusterAddonStageStatus'],
    ['ClusterAddon', '.status.hooks[*]', 'ClusterAddonHookStatus'],
    ['ClusterAddon', '.status.conditions[*]', 'Condition'],
  ];

  it.each(mapping)('%s schema at "%s" has exactly the fields of %s, required where the type requires them', (kind, path, typeName) => {
    const node = schemaAt(versionSchema(crds[kind], VERSION), path);
    expect(node, `${kind} schema has no ${path}`).toBeDefined();
    expect(compareWithType(node!, types.fields(typeName), path, path === '' ? serverSet : {})).toEqual([]);
  });

  it('admits an object of each kind with every field of the types filled in, dropping nothing', () => {
    for (const [kind, object] of [['ClusterStack', fullClusterStack], ['ClusterStackRelease', fullClusterStackRelease], ['ClusterAddon', fullClusterAddon]] as const) {
      const result = lint(kind)(object);
      expect(result.errors, kind).toEqual([]);
      expect(result.pruned, kind).toEqual([]);
    }
  });
});

describe('ClusterStack CRD', () => {
  const schema = versionSchema(crds.ClusterStack, VERSION);

  describe('accepts', () => {
    it('a CSO-style spec (docker/ferrol, providerRef to a DockerClusterStackReleaseTemplate)', () => {
      const result = lint('ClusterStack')(yaml.load(CSO_STYLE_CLUSTERSTACK, { schema: yaml.CORE_SCHEMA }));
      expect(result.errors).toEqual([]);
      expect(result.stored.spec).toMatchObject({ autoSubscribe: false, noProvider: false, versions: ['v1', 'v2'] });
    });

    it('a minimal spec and fills in channel stable, autoSubscribe true and noProvider false', () => {
      const result = admit('ClusterStack')({
        apiVersion: API_VERSION,
        kind: 'ClusterStack',
        metadata: { name: 'docker-ferrol-1-30' },
        spec: { provider: 'docker', name: 'ferrol', kubernetesVersion: '1.30', providerRef: { kind: 'DockerClusterStackReleaseTemplate', name: 'images' } },
      });
      expect(result.errors).toEqual([]);
      expect(result.stored.spec).toMatchObject({ channel: 'stable', autoSubscribe: true, noProvider: false });
    });

    it.each([
      ['stable versions', 'stable', ['v1', 'v3', 'v10']],
      ['pre-release versions', 'alpha', ['v1-alpha.5', 'v2-alpha.10']],
      ['hash builds on the custom channel', 'custom', ['v0-sha.hipstsw', 'v1-sha.abc1234']],
      ['release candidates', 'rc', ['v4-rc.1']],
    ])('%s', (_label, channel, versions) => {
      expect(admit('ClusterStack')(aClusterStack({ channel, versions })).errors).toEqual([]);
    });

    it('Kubernetes versions with a two-digit major or minor', () => {
      expect(admit('ClusterStack')(aClusterStack({ kubernetesVersion: '1.100' })).errors).toEqual([]);
      expect(admit('ClusterStack')(aClusterStack({ kubernetesVersion: '10.0' })).errors).toEqual([]);
    });

    it('free-form addon values, kept as they are', () => {
      const addonValues = { cilium: { hubble: { relay: { enabled: true } } }, list: [1, 'two', { three: 3 }] };
      const addonStageValues = { cni: { anything: { goes: ['here'] } } };
      const result = lint('ClusterStack')(aClusterStack({ addonValues, addonStageValues }));
      expect(result.errors).toEqual([]);
      expect(result.stored.spec).toMatchObject({ addonValues, addonStageValues });
    });
  });

  describe('rejects', () => {
    const rejects = (object: Record<string, unknown>): string[] => admit('ClusterStack')(object).errors;

    it('a provider containing a dash', () => {
      expect(rejects(aClusterStack({ provider: 'do-cker' }))).toEqual([expect.stringMatching(/^\/spec\/provider must match pattern/)]);
    });

    it('a name containing a dash or capitals', () => {
      expect(rejects(aClusterStack({ name: 'fer-rol' }))).toEqual([expect.stringMatching(/^\/spec\/name must match pattern/)]);
      expect(rejects(aClusterStack({ name: 'Ferrol' }))).toEqual([expect.stringMatching(/^\/spec\/name must match pattern/)]);
    });

    it('an empty provider or name', () => {
      expect(rejects(aClusterStack({ provider: '' }))).toContain('/spec/provider must NOT have fewer than 1 characters');
      expect(rejects(aClusterStack({ name: '' }))).toContain('/spec/name must NOT have fewer than 1 characters');
    });

    it('a kubernetesVersion with a patch level (1.30.1)', () => {
      expect(rejects(aClusterStack({ kubernetesVersion: '1.30.1' }))).toEqual([expect.stringMatching(/^\/spec\/kubernetesVersion must match pattern/)]);
    });

    it('a kubernetesVersion with a v prefix (v1.30)', () => {
      expect(rejects(aClusterStack({ kubernetesVersion: 'v1.30' }))).toEqual([expect.stringMatching(/^\/spec\/kubernetesVersion must match pattern/)]);
    });

    it('a kubernetesVersion with a leading zero (1.030), which would not round-trip through release tags', () => {
      expect(rejects(aClusterStack({ kubernetesVersion: '1.030' }))).toEqual([expect.stringMatching(/^\/spec\/kubernetesVersion must match pattern/)]);
    });

    it('an unquoted kubernetesVersion, which YAML reads as the number 1.3', () => {
      const object = yaml.load(CSO_STYLE_CLUSTERSTACK.replace('kubernetesVersion: "1.27"', 'kubernetesVersion: 1.30'), { schema: yaml.CORE_SCHEMA });
      expect(rejects(object as Record<string, unknown>)).toContain('/spec/kubernetesVersion must be string');
    });

    it.each([
      ['3', 'without the v'],
      ['v1.alpha-5', 'with dot and dash swapped'],
      ['v1-alpha-5', 'in the dash form of release tags'],
      ['v01', 'with a leading zero'],
      ['v1-Alpha.5', 'with capitals'],
      ['v1-alpha.', 'without a patch'],
    ])('a version %s (%s)', (version) => {
      expect(rejects(aClusterStack({ versions: ['v1', version] }))).toEqual([expect.stringMatching(/^\/spec\/versions\/1 must match pattern/)]);
    });

    it.each(['Alpha', 'pre-release', '1rc', ''])('a channel %j', (channel) => {
      expect(rejects(aClusterStack({ channel }))).not.toEqual([]);
    });

    it.each(['provider', 'name', 'kubernetesVersion'])('a spec without %s', (field) => {
      expect(rejects(withoutField(aClusterStack(), field))).toEqual([`/spec must have required property '${field}'`]);
    });

    it('an object without spec', () => {
      expect(rejects({ apiVersion: API_VERSION, kind: 'ClusterStack', metadata: { name: 'x' } })).toEqual(["(root) must have required property 'spec'"]);
    });

    it('a non-boolean autoSubscribe', () => {
      expect(rejects(aClusterStack({ autoSubscribe: 'yes' }))).toEqual(['/spec/autoSubscribe must be boolean']);
    });

    it('a condition whose status is Maybe', () => {
      const object = aClusterStack({}, { status: { conditions: [aReadyCondition({ status: 'Maybe' })] } });
      expect(rejects(object)).toEqual(['/status/conditions/0/status must be equal to one of the allowed values']);
    });

    it('a condition without lastTransitionTime or with a time that is not RFC 3339', () => {
      const missing = { type: 'Ready', status: 'True' };
      expect(rejects(aClusterStack({}, { status: { conditions: [missing] } }))).toEqual(["/status/conditions/0 must have required property 'lastTransitionTime'"]);
      const notADate = aReadyCondition({ lastTransitionTime: 'yesterday' });
      expect(rejects(aClusterStack({}, { status: { conditions: [notADate] } }))).toEqual(['/status/conditions/0/lastTransitionTime must match format "date-time"']);
    });

    it('a condition severity that Cluster API does not know', () => {
      const object = aClusterStack({}, { status: { conditions: [aReadyCondition({ status: 'False', severity: 'Fatal' })] } });
      expect(rejects(object)).toEqual(['/status/conditions/0/severity must be equal to one of the allowed values']);
    });

    it('a summary entry with an unknown phase or without ready', () => {
      const badPhase = aClusterStack({}, { status: { summary: [{ name: 'docker-ferrol-1-30-v1', ready: false, phase: 'applying' }] } });
      expect(rejects(badPhase)).toEqual(['/status/summary/0/phase must be equal to one of the allowed values']);
      const noReady = aClusterStack({}, { status: { summary: [{ name: 'docker-ferrol-1-30-v1', phase: 'done' }] } });
      expect(rejects(noReady)).toEqual(["/status/summary/0 must have required property 'ready'"]);
    });

    it('an object of another apiVersion or kind', () => {
      expect(rejects({ ...aClusterStack(), apiVersion: 'clusterstack.x-k8s.io/v1beta1' })).toEqual([
        'apiVersion is "clusterstack.x-k8s.io/v1beta1", expected clusterstack.x-k8s.io/v1alpha1',
      ]);
      expect(rejects({ ...aClusterStack(), kind: 'ClusterStackRelease' })).toEqual(['kind is "ClusterStackRelease", expected ClusterStack']);
    });
  });

  describe('unknown fields', () => {
    const withTypo = aClusterStack({ autosubscribe: false, versions: ['v1'] }, { extra: 1, status: { latestRelease: 'x', ready: true } });

    it('are dropped silently by the API server, as pruning shows', () => {
      const { value, pruned } = pruneUnknownFields(withTypo, schema);
      expect(pruned).toEqual(['.spec.autosubscribe', '.extra', '.status.ready']);
      expect((value as { spec: Record<string, unknown> }).spec).not.toHaveProperty('autosubscribe');
      // ... so the typo is lost and the default applies: the opposite of what the user asked for.
      expect(admit('ClusterStack')(withTypo)).toMatchObject({ errors: [], stored: { spec: { autoSubscribe: true } } });
    });

    it('are kept below addonValues and addonStageValues, which are free-form', () => {
      const object = aClusterStack({ addonValues: { anything: { at: 'all' } }, addonStageValues: { cni: { x: 1 } } });
      expect(pruneUnknownFields(object, schema).pruned).toEqual([]);
    });

    it('are kept in metadata, which the API server prunes to ObjectMeta on its own', () => {
      const object = aClusterStack({}, { metadata: { name: 'x', labels: { a: 'b' }, annotations: { [`${GROUP}/release-source`]: 'github:o/r' } } });
      expect(pruneUnknownFields(object, schema).pruned).toEqual([]);
    });

    it('are reported by strict validation, which our own spec checks use', () => {
      expect(lint('ClusterStack')(withTypo).errors).toEqual([
        '(root)/extra is not a known field',
        '/spec/autosubscribe is not a known field',
        '/status/ready is not a known field',
      ]);
    });
  });

  describe('CEL rules', () => {
    const rules = celRules(schema);

    it.each([
      ['provider', 'another provider'],
      ['name', 'another cluster stack'],
      ['kubernetesVersion', 'another Kubernetes version'],
      ['channel', 'another channel'],
    ])('make spec.%s immutable and say to create a new ClusterStack for %s instead', (field, what) => {
      const onField = rules.filter((rule) => rule.path === `.spec.${field}` && isTransitionRule(rule));
      expect(onField).toHaveLength(1);
      expect(onField[0]?.rule).toBe('self == oldSelf');
      expect(onField[0]?.message).toBe(`spec.${field} is immutable: create a new ClusterStack for ${what} instead`);
    });

    it('are not on other fields: versions, autoSubscribe, providerRef and values may change', () => {
      expect(rules.filter(isTransitionRule).map((rule) => rule.path).sort()).toEqual(
        ['.spec.channel', '.spec.kubernetesVersion', '.spec.name', '.spec.provider'],
      );
    });

    it('require providerRef unless noProvider is true, pointing at the field', () => {
      const rule = rules.find((r) => r.path === '.spec' && r.rule.includes('providerRef'));
      expect(rule).toMatchObject({
        rule: 'has(self.providerRef) || (has(self.noProvider) && self.noProvider)',
        reason: 'FieldValueRequired',
        fieldPath: '.providerRef',
      });
      expect(rule?.message).toMatch(/^providerRef is required unless noProvider is true: /);
    });

    it('keep <provider>-<name>-<major>-<minor> within Helm\'s 53-character release names', () => {
      const rule = rules.find((r) => r.path === '.spec' && r.rule.includes('size('));
      // kubernetesVersion keeps its length when "." becomes "-"; two dashes join the three parts.
      expect(rule?.rule).toBe('size(self.provider) + size(self.name) + size(self.kubernetesVersion) <= 51');
      expect(rule?.message).toMatch(/Helm limits to 53 characters: use a shorter provider or name$/);
    });

    describe('of the channel, said as the controller says them (src/api/channel-rules.ts)', () => {
      const channelRule = rules.find((r) => r.path === '.spec.channel' && !isTransitionRule(r));
      const versionsRule = rules.find((r) => r.path === '.spec' && r.fieldPath === '.versions');
      /** What the API server would answer for `spec` (after defaulting): the messages of the channel rules that fail. */
      const admission = (spec: Record<string, unknown>): string[] => {
        const stored = admit('ClusterStack')(aClusterStack(spec)).stored as { spec: Record<string, unknown> };
        const failed: string[] = [];
        if (!cel.evaluate(channelRule!.rule, { self: stored.spec['channel'] })) failed.push(cel.evaluate(channelRule!.messageExpression!, { self: stored.spec['channel'] }) as string);
        if (!cel.evaluate(versionsRule!.rule, { self: stored.spec })) failed.push(cel.evaluate(versionsRule!.messageExpression!, { self: stored.spec }) as string);
        return failed;
      };
      /** What validate.ts says of the channel and versions. */
      const controller = (spec: Record<string, unknown>): string[] => validateClusterStack(aClusterStack(spec)).filter((problem) => /^spec\.(channel|versions)/.test(problem.path ?? '')).map((problem) => problem.message);

      it('are the rules channel-rules.ts defines, with a bounded list for their cost', () => {
        expect(channelRule).toMatchObject(CHANNEL_CEL_RULE);
        expect(versionsRule).toMatchObject(VERSIONS_CHANNEL_CEL_RULE);
        expect(schemaAt(schema, '.spec.versions')?.maxItems).toBe(MAX_VERSIONS);
        expect(schemaAt(schema, '.spec.versions')?.items?.maxLength).toBeDefined();
      });

      it.each([
        ['stable versions', { versions: ['v1', 'v3'] }],
        ['no channel (stable) and no versions', {}],
        ['pre-release versions on their channel', { channel: 'alpha', versions: ['v1-alpha.5', 'v2-alpha.10'] }],
        ['hash builds on custom', { channel: 'custom', versions: ['v0-sha.abc1234'] }],
      ])('admit %s, as the controller does', (_label, spec) => {
        expect(admission(spec)).toEqual([]);
        expect(controller(spec)).toEqual([]);
      });

      it.each([
        ['a pre-release version on stable', { versions: ['v1', 'v1-alpha.5'] }, 'v1-alpha.5 belongs to the alpha channel, but this ClusterStack follows stable; list only stable versions or change spec.channel'],
        ['a hash build outside custom', { channel: 'alpha', versions: ['v0-sha.abc1234'] }, 'v0-sha.abc1234 belongs to the custom channel, but this ClusterStack follows alpha; list only alpha versions or change spec.channel'],
        ['a stable version on custom', { channel: 'custom', versions: ['v3'] }, 'v3 belongs to the stable channel, but this ClusterStack follows custom; list only custom versions or change spec.channel'],
        ['another pre-release channel', { channel: 'beta', versions: ['v1-alpha.5'] }, 'v1-alpha.5 belongs to the alpha channel, but this ClusterStack follows beta; list only beta versions or change spec.channel'],
        ['an unknown channel', { channel: 'Beta1' }, 'must be stable, custom or a pre-release channel name such as alpha, found "Beta1"'],
      ])('refuse %s with the message of the controller', (_label, spec, message) => {
        expect(admission(spec)).toEqual([message]);
        expect(controller(spec)).toEqual([message]);
      });
    });

    it('run on required or defaulted fields only, so an update cannot skip them by removing the field', () => {
      expect(schema.required).toContain('spec');
      expect(schemaAt(schema, '.spec')?.required?.sort()).toEqual(['kubernetesVersion', 'name', 'provider']);
      expect(schemaAt(schema, '.spec.channel')?.default).toBe('stable');
    });
  });
});

describe('ClusterStackRelease CRD', () => {
  const rejects = (object: Record<string, unknown>): string[] => admit('ClusterStackRelease')(object).errors;
  const aRelease = (status: Record<string, unknown>): Record<string, unknown> => ({
    apiVersion: API_VERSION, kind: 'ClusterStackRelease', metadata: { name: 'docker-ferrol-1-27-v3' }, status,
  });

  it('accepts a release without spec, as in noProvider mode, and defaults ready to false', () => {
    const result = admit('ClusterStackRelease')(aRelease({ kubernetesVersion: '1.27.3' }));
    expect(result.errors).toEqual([]);
    expect(result.stored.status).toEqual({ kubernetesVersion: '1.27.3', ready: false });
  });

  it('shows whether the manifests are published from the ManifestsPublished condition', () => {
    const published = crds.ClusterStackRelease.spec.versions[0]?.additionalPrinterColumns?.find((c) => c.name === 'Published');
    expect(published?.jsonPath).toBe(".status.conditions[?(@.type=='ManifestsPublished')].status");
  });

  it('rejects a resource status other than synced, not-synced or empty', () => {
    const object = aRelease({ resources: [{ kind: 'ClusterClass', name: 'x', status: 'Synced' }] });
    expect(rejects(object)).toEqual(['/status/resources/0/status must be equal to one of the allowed values']);
  });

  it('rejects a resource without kind or name', () => {
    expect(rejects(aRelease({ resources: [{ name: 'x' }] }))).toEqual(["/status/resources/0 must have required property 'kind'"]);
    expect(rejects(aRelease({ resources: [{ kind: 'ClusterClass' }] }))).toEqual(["/status/resources/0 must have required property 'name'"]);
  });

  it('rejects a condition whose status is Maybe', () => {
    expect(rejects(aRelease({ conditions: [aReadyCondition({ status: 'Maybe' })] }))).toEqual([
      '/status/conditions/0/status must be equal to one of the allowed values',
    ]);
  });

  it('rejects a non-boolean ready', () => {
    expect(rejects(aRelease({ ready: 'true' }))).toEqual(['/status/ready must be boolean']);
  });
});

describe('ClusterAddon CRD', () => {
  const rejects = (object: Record<string, unknown>): string[] => admit('ClusterAddon')(object).errors;
  const anAddon = (spec: Record<string, unknown>, status?: Record<string, unknown>): Record<string, unknown> => ({
    apiVersion: API_VERSION,
    kind: 'ClusterAddon',
    metadata: { name: 'cluster-addon-bravo' },
    spec: { clusterRef: { kind: 'Cluster', name: 'bravo' }, ...spec },
    ...(status ? { status } : {}),
  });

  it('accepts a freshly created ClusterAddon and defaults ready to false', () => {
    const result = admit('ClusterAddon')(anAddon({}, {}));
    expect(result.errors).toEqual([]);
    expect(result.stored.status).toEqual({ ready: false });
  });

  it('shows the Cluster from spec.clusterRef', () => {
    const cluster = crds.ClusterAddon.spec.versions[0]?.additionalPrinterColumns?.find((c) => c.name === 'Cluster');
    expect(cluster?.jsonPath).toBe('.spec.clusterRef.name');
  });

  it('rejects a stage action other than apply or delete', () => {
    expect(rejects(anAddon({}, { stages: [{ name: 'cni', action: 'upgrade' }] }))).toEqual([
      '/status/stages/0/action must be equal to one of the allowed values',
    ]);
  });

  it('rejects a stage without a name', () => {
    expect(rejects(anAddon({}, { stages: [{ action: 'apply' }] }))).toEqual(["/status/stages/0 must have required property 'name'"]);
  });

  it('rejects a condition whose status is Maybe', () => {
    expect(rejects(anAddon({}, { conditions: [aReadyCondition({ status: 'Maybe' })] }))).toEqual([
      '/status/conditions/0/status must be equal to one of the allowed values',
    ]);
  });

  it('rejects a clusterRef that is not an object', () => {
    expect(rejects(anAddon({ clusterRef: 'bravo' }))).toEqual(['/spec/clusterRef must be object']);
  });
});

describe('the examples', () => {
  interface ExampleObject { file: string; index: number; object: Record<string, unknown> }
  const OUR_KIND_LINE = /^kind:\s*["']?(ClusterStack|ClusterStackRelease|ClusterAddon)["']?\s*$/gm;

  // Every document of our kinds in examples/**/*.yaml. Helm chart directories (a Chart.yaml and
  // everything below) and templated files are skipped: they are not objects until rendered.
  function readExamples(): { objects: ExampleObject[]; declared: Map<string, number>; unreadable: string[] } {
    const objects: ExampleObject[] = [];
    const declared = new Map<string, number>();
    const unreadable: string[] = [];
    if (!existsSync(EXAMPLES_DIR)) return { objects, declared, unreadable };
    const files = (readdirSync(EXAMPLES_DIR, { recursive: true }) as string[])
      .filter((file) => /\.ya?ml$/.test(file))
      .map((file) => join(EXAMPLES_DIR, file))
      .sort();
    const inChart = (file: string): boolean => {
      for (let dir = dirname(file); dir.startsWith(EXAMPLES_DIR); dir = dirname(dir)) {
        if (existsSync(join(dir, 'Chart.yaml'))) return true;
      }
      return false;
    };
    for (const file of files) {
      if (inChart(file)) continue;
      const text = readFileSync(file, 'utf8');
      if (text.includes('{{')) continue;
      const name = relative(ROOT, file);
      const kindLines = text.match(OUR_KIND_LINE)?.length ?? 0;
      if (kindLines > 0) declared.set(name, kindLines);
      let docs: unknown[];
      try {
        // CORE_SCHEMA: timestamps stay strings, as in the JSON the API server sees.
        docs = yaml.loadAll(text, undefined, { schema: yaml.CORE_SCHEMA });
      } catch (error) {
        // Not our business unless it might hold one of our objects.
        if (text.includes(GROUP)) unreadable.push(`${name}: ${(error as Error).message}`);
        continue;
      }
      docs.forEach((doc, index) => {
        const object = doc as Record<string, unknown> | null;
        // Any version of our group counts, so a wrong apiVersion fails instead of being skipped.
        const ours = KINDS.some((k) => k.kind === object?.kind) && String(object?.apiVersion).startsWith(`${GROUP}/`);
        if (object && ours) objects.push({ file: name, index, object });
      });
    }
    return { objects, declared, unreadable };
  }

  const { objects, declared, unreadable } = readExamples();

  it('are readable where they might hold our objects', () => {
    expect(unreadable).toEqual([]);
  });

  it('are valid ClusterStacks, ClusterStackReleases and ClusterAddons, with no field the API server would drop', () => {
    const problems = objects.flatMap(({ file, index, object }) =>
      lint(object.kind as Kind)(object).errors.map((error) => `${file} document ${index + 1} (${String(object.kind)}): ${error}`),
    );
    expect(problems).toEqual([]);
  });

  it('are all checked: every document declaring one of our kinds was found and validated', () => {
    const found = new Map<string, number>();
    for (const { file } of objects) found.set(file, (found.get(file) ?? 0) + 1);
    expect(Object.fromEntries(found)).toEqual(Object.fromEntries(declared));
  });

  it('include the quickstart ClusterStack', () => {
    const quickstart = objects.filter((o) => o.file.startsWith(relative(ROOT, QUICKSTART_DIR)) && o.object.kind === 'ClusterStack');
    expect(quickstart.length).toBeGreaterThanOrEqual(1);
  });
});

describe('crds/kustomization.yaml', () => {
  it('lists every CRD file in crds/ and nothing else', () => {
    const kustomization = yaml.load(readFileSync(join(CRD_DIR, 'kustomization.yaml'), 'utf8')) as { kind: string; resources: string[] };
    const crdFiles = readdirSync(CRD_DIR).filter((file) => file !== 'kustomization.yaml' && file.endsWith('.yaml'));
    expect(kustomization.kind).toBe('Kustomization');
    expect([...kustomization.resources].sort()).toEqual(crdFiles.sort());
    expect(crdFiles).toHaveLength(KINDS.length);
  });
});
