// Turns planned providers into the files under management/providers/<kind>-<name>/: clusterctl's
// variable substitution (a variable without value or default withholds the provider, named),
// the components read with Kubernetes' YAML, customised (customize-components.ts), additional
// manifests appended, the secret policy applied, CRDs and Namespaces marked so no engine ever
// prunes them (the engines' keep marks), one object per file. Pure and deterministic: no helm, no I/O, so every
// render renders providers again and gets the same bytes.
import { describeProvider, PROVIDER_KINDS } from '../api/provider-types.js';
import type { KubeObject } from '../api/types.js';
import { formatProblem } from '../core/problem.js';
import type { ProviderRecord, WithheldEntry } from '../output/provenance.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import { canonicalJson } from './canonical-json.js';
import { fileNamesFor } from './manifest-objects.js';
import { apiGroup, scopeResolver } from '../api/object-scope.js';
import { applySecretPolicy, type SecretPolicy, SecretRefusedError, throwRefusals } from './secret-policy.js';
import { sha256Digest } from '../release/content-digest.js';
import { decodeYamlDocuments, encodeYaml, YamlDecodeError } from '../yaml/kube-yaml.js';
import { customizeComponents, type ImageOverrides, ProviderRenderError } from '../providers/customize-components.js';
import { substituteVariables, SubstitutionSyntaxError } from '../providers/envsubst.js';
import type { PlannedCertManager, PlannedProvider, ProviderPlan } from '../providers/plan-providers.js';
import { compareText } from '../core/compare-text.js';
import type { KeepMarks } from '../core/engine-rules.js';
import { Failure } from '../core/failure.js';

const NEVER_PRUNED = new Set(['CustomResourceDefinition', 'Namespace']);

export interface ProviderRenderResult {
  /** Unit directory -> file name -> content. */
  rendered: Map<string, Map<string, string>>;
  records: ProviderRecord[];
  withheld: WithheldEntry[];
}

class Withhold extends Failure {
  constructor(message: string) {
    super('fix-input', message);
  }
}

function readDocuments(text: string, origin: string): KubeObject[] {
  let documents;
  try {
    documents = decodeYamlDocuments(text);
  } catch (error) {
    if (error instanceof YamlDecodeError) throw new Withhold(`${origin} is not valid YAML: ${error.message}`);
    throw error;
  }
  const objects: KubeObject[] = [];
  for (const document of documents) {
    const value = document.value as Record<string, unknown> | null;
    if (value === null) continue;
    const metadata = value.metadata as Record<string, unknown> | undefined;
    if (
      typeof value !== 'object' ||
      Array.isArray(value) ||
      typeof value.apiVersion !== 'string' ||
      typeof value.kind !== 'string' ||
      typeof metadata?.name !== 'string'
    ) {
      throw new Withhold(
        `${origin}, document at line ${document.startLine}: is not a Kubernetes object with apiVersion, kind and metadata.name`,
      );
    }
    objects.push(value as unknown as KubeObject);
  }
  return objects;
}

function substitute(text: string, planned: PlannedProvider, what: string): string {
  let result;
  try {
    result = substituteVariables(text, (name) => planned.variables.get(name));
  } catch (error) {
    if (error instanceof SubstitutionSyntaxError) throw new Withhold(`${what}: ${error.message}`);
    throw error;
  }
  if (result.missing.length > 0) {
    const where = planned.provider.spec?.configSecret
      ? `the Secret spec.configSecret names (${planned.provider.spec.configSecret.name})`
      : 'a Secret named by spec.configSecret';
    throw new Withhold(
      `${what} needs variable${result.missing.length > 1 ? 's' : ''} ${result.missing.join(', ')}, which ${result.missing.length > 1 ? 'have' : 'has'} no value and no default; set ${result.missing.length > 1 ? 'them' : 'it'} in ${where}`,
    );
  }
  return result.text;
}

function imageOverrides(planned: PlannedProvider): ImageOverrides | undefined {
  const text = planned.variables.get('images');
  if (text === undefined) return undefined;
  const value = readDocumentsValue(text);
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Withhold(
      'the "images" entry of the configuration must map components (or "all") to {repository, tag}, as in clusterctl\'s configuration',
    );
  return value as ImageOverrides;
}

function readDocumentsValue(text: string): unknown {
  try {
    return decodeYamlDocuments(text)[0]?.value;
  } catch (error) {
    if (error instanceof YamlDecodeError)
      throw new Withhold(`the "images" entry of the configuration is not valid YAML: ${error.message}`);
    throw error;
  }
}

/** CRDs and Namespaces are never pruned: an upgrade or a removal must not delete user objects. */
function markNeverPruned(object: KubeObject, marks: KeepMarks): void {
  if (!NEVER_PRUNED.has(object.kind)) return;
  const annotations = (object.metadata.annotations ??= {});
  Object.assign(annotations, marks.annotationsFor(annotations));
}

/** The group/kind pairs a provider's CRDs define: what Cluster API objects its removal would orphan. */
function definedKinds(objects: KubeObject[]): string[] {
  const kinds = new Set<string>();
  for (const object of objects) {
    if (object.kind !== 'CustomResourceDefinition' || apiGroup(object.apiVersion) !== 'apiextensions.k8s.io') continue;
    const spec = (object as { spec?: { group?: unknown; names?: { kind?: unknown } } }).spec;
    if (typeof spec?.group === 'string' && typeof spec.names?.kind === 'string')
      kinds.add(`${spec.group}/${spec.names.kind}`);
  }
  return [...kinds].sort();
}

function renderOne(
  planned: PlannedProvider,
  secrets: SecretPolicy,
  marks: KeepMarks,
): { files: Map<string, string>; kinds: string[]; notes: string[] } {
  const release = planned.release!;
  const info = PROVIDER_KINDS[planned.provider.kind]!;
  const namespace = planned.provider.metadata.namespace ?? 'default';
  const origin = `${release.source} ${planned.version} ${info.componentsAsset}`;
  const objects = readDocuments(substitute(release.components, planned, origin), origin);
  const images = imageOverrides(planned);
  const scopeOf = scopeResolver(objects);
  let customized: KubeObject[];
  try {
    customized = customizeComponents(objects, {
      spec: planned.provider.spec ?? {},
      targetNamespace: namespace,
      manifestLabel: info.manifestLabel(planned.provider.metadata.name),
      isClusterScoped: (object) => {
        const scope = scopeOf(object);
        return scope === 'Cluster' || (scope === 'Unknown' && !object.metadata.namespace);
      },
      ...(images ? { images } : {}),
    });
  } catch (error) {
    if (error instanceof ProviderRenderError) throw new Withhold(error.message);
    throw error;
  }
  if (planned.additionalManifests !== undefined) {
    const extra = readDocuments(
      substitute(planned.additionalManifests, planned, 'spec.additionalManifests'),
      'spec.additionalManifests',
    );
    const extraScope = scopeResolver([...objects, ...extra]);
    for (const object of extra)
      if (!object.metadata.namespace && extraScope(object) === 'Namespaced') object.metadata.namespace = namespace;
    customized.push(...extra);
  }
  for (const object of customized) markNeverPruned(object, marks);
  const entries = customized.map((object) => ({ object, text: encodeYaml(object) }));
  const kept = applySecretPolicy(entries, secrets, describeProvider(planned.provider));
  // Provider components are not helm units: their Secrets are not SOPS-encrypted (yet), so under
  // --secrets encrypt a provider rendering one is withheld rather than committed in plain text.
  if (kept.toEncrypt.size > 0) {
    const names = [...kept.toEncrypt]
      .map((entry) => `${entry.object.metadata.namespace ?? namespace}/${entry.object.metadata.name}`)
      .join(', ');
    throw new Withhold(
      `its components render Secret ${names}; --secrets encrypt covers the stacks' Secrets, not provider components: leave it out with a manifestPatch, or render providers with --secrets drop`,
    );
  }
  const names = fileNamesFor(
    kept.objects.map((entry) => entry.object),
    namespace,
  );
  const notes = kept.dropped.map(
    (finding) => `${finding.object.kind} ${finding.object.metadata.name} left out (--secrets drop): it ${finding.why}`,
  );
  return {
    files: new Map(kept.objects.map((entry, index) => [names[index]!, entry.text])),
    kinds: definedKinds(objects),
    notes,
  };
}

/** Renders every provider whose plan has no problem (CRDs and Namespaces with `marks`); a provider that cannot be rendered is withheld, its previous files kept. Throws SecretRefusedError. */
export function renderProviders(
  plan: ProviderPlan | undefined,
  previous: RenderedTree,
  previousRecords: ProviderRecord[],
  secrets: SecretPolicy,
  marks: KeepMarks,
): ProviderRenderResult {
  const result: ProviderRenderResult = { rendered: new Map(), records: [], withheld: [] };
  const refusals: SecretRefusedError[] = [];
  for (const planned of plan?.providers ?? []) {
    const { provider } = planned;
    const namespace = provider.metadata.namespace ?? 'default';
    const entry = { kind: 'provider' as const, namespace, name: `${provider.kind}/${provider.metadata.name}` };
    const withhold = (reason: string): void =>
      withholdProvider(result, previous, previousRecords, planned.dir, { ...entry, reason });
    if (planned.problems.length > 0 || !planned.release) {
      withhold(planned.problems.map(formatProblem).join('; ') || 'no release');
      continue;
    }
    try {
      const { files, kinds, notes } = renderOne(planned, secrets, marks);
      result.rendered.set(planned.dir, files);
      result.records.push(providerRecord(planned, planned.release, namespace, secrets, { files, kinds, notes }));
    } catch (error) {
      if (error instanceof SecretRefusedError) refusals.push(error);
      else if (error instanceof Withhold) withhold(error.message);
      else throw error;
    }
  }
  const certManager = plan?.certManager;
  if (certManager) {
    try {
      renderCertManager(certManager, previous, previousRecords, secrets, marks, result);
    } catch (error) {
      if (error instanceof SecretRefusedError) refusals.push(error);
      else throw error;
    }
  }
  throwRefusals(refusals);
  result.records.sort((a, b) => compareText(a.dir, b.dir));
  return result;
}

/** A rendered provider's record; its input digest covers everything its files are made from. */
function providerRecord(
  planned: PlannedProvider,
  release: NonNullable<PlannedProvider['release']>,
  namespace: string,
  secrets: SecretPolicy,
  { files, kinds, notes }: ReturnType<typeof renderOne>,
): ProviderRecord {
  const { provider } = planned;
  return {
    dir: planned.dir,
    kind: provider.kind,
    namespace,
    name: provider.metadata.name,
    version: planned.version,
    pinned: planned.pinned,
    contract: planned.contract ?? '',
    source: release.source,
    digest: release.digest,
    inputDigest: sha256Digest(
      canonicalJson({
        release: release.digest,
        spec: provider.spec ?? {},
        namespace,
        variables: [...planned.variables.keys()].sort(),
        additional: planned.additionalManifests ?? null,
        secrets,
      }),
    ),
    kinds,
    files: [...files.keys()].sort(),
    ...(notes.length > 0 ? { notes } : {}),
  };
}

/** Withholds a provider (or cert-manager): its previous files and record stay when every file is still in the tree. */
function withholdProvider(
  result: ProviderRenderResult,
  previous: RenderedTree,
  previousRecords: ProviderRecord[],
  dir: string,
  entry: Omit<WithheldEntry, 'previousKept'>,
): void {
  const old = previousRecords.find((record) => record.dir === dir);
  const files = old
    ? new Map(
        old.files.flatMap((file) =>
          previous.has(`${old.dir}/${file}`) ? [[file, previous.get(`${old.dir}/${file}`)!] as [string, string]] : [],
        ),
      )
    : undefined;
  const kept = Boolean(old && files && files.size === old.files.length);
  if (kept) {
    result.rendered.set(old!.dir, files!);
    result.records.push(old!);
  }
  result.withheld.push({ ...entry, previousKept: kept });
}

/** The kinds Flux waits for before any provider: cert-manager's Deployments (its webhook among them) and CRDs. */
function certManagerHealthChecks(objects: KubeObject[]): NonNullable<ProviderRecord['healthChecks']> {
  return objects
    .filter(
      (object) =>
        (object.kind === 'Deployment' && apiGroup(object.apiVersion) === 'apps') ||
        (object.kind === 'CustomResourceDefinition' && apiGroup(object.apiVersion) === 'apiextensions.k8s.io'),
    )
    .map((object) => ({
      apiVersion: object.apiVersion,
      kind: object.kind,
      ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}),
      name: object.metadata.name,
    }))
    .sort((a, b) =>
      compareText(`${a.kind}/${a.namespace ?? ''}/${a.name}`, `${b.kind}/${b.namespace ?? ''}/${b.name}`),
    );
}

/**
 * cert-manager's components as published (clusterctl applies them unchanged: no variables, no
 * target namespace), CRDs and Namespaces never pruned, one object per file; withheld alone (its
 * previous files kept) when they cannot be read. Throws SecretRefusedError.
 */
function renderCertManager(
  planned: PlannedCertManager,
  previous: RenderedTree,
  previousRecords: ProviderRecord[],
  secrets: SecretPolicy,
  marks: KeepMarks,
  result: ProviderRenderResult,
): void {
  const namespace = 'cert-manager';
  const withhold = (reason: string): void =>
    withholdProvider(result, previous, previousRecords, planned.dir, {
      kind: 'provider',
      namespace,
      name: 'CertManager/cert-manager',
      reason,
    });
  const release = planned.release;
  if (planned.problems.length > 0 || !release) {
    withhold(planned.problems.map(formatProblem).join('; ') || 'no release');
    return;
  }
  let objects: KubeObject[];
  try {
    objects = readDocuments(release.components, `cert-manager ${release.version} (${release.source})`);
  } catch (error) {
    if (error instanceof Withhold) return withhold(error.message);
    throw error;
  }
  if (!objects.some((object) => object.kind === 'Deployment'))
    return withhold(
      `cert-manager ${release.version} (${release.source}) holds no Deployment: it is not cert-manager's cert-manager.yaml`,
    );
  for (const object of objects) markNeverPruned(object, marks);
  const kept = applySecretPolicy(
    objects.map((object) => ({ object, text: encodeYaml(object) })),
    secrets,
    'cert-manager',
  );
  if (kept.toEncrypt.size > 0)
    return withhold(
      `its components hold Secrets; --secrets encrypt covers the stacks' Secrets, not cert-manager's: render with --secrets drop`,
    );
  const names = fileNamesFor(
    kept.objects.map((entry) => entry.object),
    namespace,
  );
  const files = new Map(kept.objects.map((entry, index) => [names[index]!, entry.text]));
  const notes = kept.dropped.map(
    (finding) => `${finding.object.kind} ${finding.object.metadata.name} left out (--secrets drop): it ${finding.why}`,
  );
  result.rendered.set(planned.dir, files);
  result.records.push({
    dir: planned.dir,
    kind: 'CertManager',
    namespace,
    name: 'cert-manager',
    version: release.version,
    pinned: true,
    contract: '',
    source: release.source,
    digest: release.digest,
    inputDigest: sha256Digest(canonicalJson({ release: release.digest, url: planned.url, secrets })),
    kinds: definedKinds(objects),
    files: [...files.keys()].sort(),
    healthChecks: certManagerHealthChecks(kept.objects.map((entry) => entry.object)),
    ...(notes.length > 0 ? { notes } : {}),
  });
}
