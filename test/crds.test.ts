// Our CRD files read as files: their names, labels, structural schemas, printer columns, the shape
// of their CEL rules and their agreement with src/api/types.ts. What the API server makes of
// objects (validation, defaults, pruning, the CEL rules evaluated) is asked of a real one in
// test/real-server-validation.test.ts, and the examples are validated there too.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { MAX_VERSIONS } from '../src/api/validate.js';
import { API_GROUP as GROUP, API_VERSION_NAME as VERSION } from '../src/api/types.js';
import {
  celRules,
  compareWithType,
  type CustomResourceDefinition,
  isTransitionRule,
  loadCrd,
  resolveColumnPath,
  schemaAt,
  structuralProblems,
  transitionRuleGap,
  TypeSource,
  versionSchema,
} from './support/crd-schema.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CRD_DIR = join(ROOT, 'crds');

const KINDS = [
  { kind: 'ClusterStack', plural: 'clusterstacks', shortName: 'csk' },
  { kind: 'ClusterStackRelease', plural: 'clusterstackreleases', shortName: 'cskr' },
  { kind: 'ClusterAddon', plural: 'clusteraddons', shortName: 'caddon' },
] as const;
type Kind = (typeof KINDS)[number]['kind'];

const crds = Object.fromEntries(
  KINDS.map(({ kind, plural }) => [kind, loadCrd(join(CRD_DIR, `${GROUP}_${plural}.yaml`))]),
) as Record<Kind, CustomResourceDefinition>;

// ---------------------------------------------------------------------------------------------

describe.each(KINDS.map((k) => [k.kind, k] as const))(
  '%s CRD, like every CRD of ours,',
  (kind, { plural, shortName }) => {
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

    it('has printer columns whose jsonPaths exist in the schema with the column type', () => {
      const columnTypes: Record<string, string[]> = {
        string: ['string'],
        boolean: ['boolean'],
        integer: ['integer'],
        number: ['number', 'integer'],
        date: ['date-time'],
      };
      const problems = (crd.spec.versions[0]?.additionalPrinterColumns ?? []).flatMap((column) => {
        const resolved = resolveColumnPath(schema, column.jsonPath);
        if ('problem' in resolved) return [`${column.name}: ${resolved.problem}`];
        return columnTypes[column.type]?.includes(resolved.type)
          ? []
          : [`${column.name}: column type ${column.type}, schema type ${resolved.type}`];
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
      expect(Object.keys(condition?.properties ?? {}).sort()).toEqual([
        'lastTransitionTime',
        'message',
        'observedGeneration',
        'reason',
        'severity',
        'status',
        'type',
      ]);
    });

    it('puts every transition rule on a field that is always present (required or defaulted)', () => {
      const gaps = celRules(schema)
        .filter(isTransitionRule)
        .map((rule) => transitionRuleGap(rule.node))
        .filter((gap) => gap !== undefined);
      expect(gaps).toEqual([]);
    });
  },
);

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

  it.each(mapping)(
    '%s schema at "%s" has exactly the fields of %s, required where the type requires them',
    (kind, path, typeName) => {
      const node = schemaAt(versionSchema(crds[kind], VERSION), path);
      expect(node, `${kind} schema has no ${path}`).toBeDefined();
      expect(compareWithType(node!, types.fields(typeName), path, path === '' ? serverSet : {})).toEqual([]);
    },
  );
});

describe('ClusterStack CRD', () => {
  const schema = versionSchema(crds.ClusterStack, VERSION);

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
      expect(
        rules
          .filter(isTransitionRule)
          .map((rule) => rule.path)
          .sort(),
      ).toEqual(['.spec.channel', '.spec.kubernetesVersion', '.spec.name', '.spec.provider']);
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

    it("keep <provider>-<name>-<major>-<minor> within Helm's 53-character release names", () => {
      const rule = rules.find((r) => r.path === '.spec' && r.rule.includes('size('));
      // kubernetesVersion keeps its length when "." becomes "-"; two dashes join the three parts.
      expect(rule?.rule).toBe('size(self.provider) + size(self.name) + size(self.kubernetesVersion) <= 51');
      expect(rule?.message).toMatch(/Helm limits to 53 characters: use a shorter provider or name$/);
    });

    it("of the channel: a channel name on spec.channel, and versions of the stack's channel on spec, with a bounded list for their cost", () => {
      const channelRule = rules.find((r) => r.path === '.spec.channel' && !isTransitionRule(r));
      const versionsRule = rules.find((r) => r.path === '.spec' && r.fieldPath === '.versions');
      expect(channelRule?.rule).toBe("self.matches('^[a-z][a-z0-9]*$')");
      expect(versionsRule?.rule).toMatch(/^!has\(self\.versions\) \|\| !self\.versions\.exists\(v, /);
      expect(schemaAt(schema, '.spec.versions')?.maxItems).toBe(MAX_VERSIONS);
      expect(schemaAt(schema, '.spec.versions')?.items?.maxLength).toBeDefined();
    });

    it('run on required or defaulted fields only, so an update cannot skip them by removing the field', () => {
      expect(schema.required).toContain('spec');
      expect(schemaAt(schema, '.spec')?.required?.sort()).toEqual(['kubernetesVersion', 'name', 'provider']);
      expect(schemaAt(schema, '.spec.channel')?.default).toBe('stable');
    });
  });
});

describe('ClusterStackRelease CRD', () => {
  it('shows whether the manifests are published from the ManifestsPublished condition', () => {
    const published = crds.ClusterStackRelease.spec.versions[0]?.additionalPrinterColumns?.find(
      (c) => c.name === 'Published',
    );
    expect(published?.jsonPath).toBe(".status.conditions[?(@.type=='ManifestsPublished')].status");
  });
});

describe('ClusterAddon CRD', () => {
  it('shows the Cluster from spec.clusterRef', () => {
    const cluster = crds.ClusterAddon.spec.versions[0]?.additionalPrinterColumns?.find((c) => c.name === 'Cluster');
    expect(cluster?.jsonPath).toBe('.spec.clusterRef.name');
  });
});

describe('crds/kustomization.yaml', () => {
  it('lists every CRD file in crds/ and nothing else', () => {
    const kustomization = yaml.load(readFileSync(join(CRD_DIR, 'kustomization.yaml'), 'utf8')) as {
      kind: string;
      resources: string[];
    };
    const crdFiles = readdirSync(CRD_DIR).filter((file) => file !== 'kustomization.yaml' && file.endsWith('.yaml'));
    expect(kustomization.kind).toBe('Kustomization');
    expect([...kustomization.resources].sort()).toEqual(crdFiles.sort());
    expect(crdFiles).toHaveLength(KINDS.length);
  });
});
