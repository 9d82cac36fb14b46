// Names and labels of the generated Flux and Argo CD objects. A name depends only on what it stands
// for (namespace, release, cluster, stage), never on what else is rendered: a renamed Kustomization
// or Application is a deleted one, and deleting one prunes what it applied.
import { createHash } from 'node:crypto';
import { InputError } from '../../src/core/problem.js';

/** Ownership labels on every wiring object, beside app.kubernetes.io/managed-by and part-of. */
export const LABEL_WIRING = 'clusterstack.x-k8s.io/wiring';
export const LABEL_NAMESPACE = 'clusterstack.x-k8s.io/namespace';
export const LABEL_RELEASE = 'clusterstack.x-k8s.io/release';
export const LABEL_CLUSTER = 'clusterstack.x-k8s.io/cluster';
export const LABEL_STAGE = 'clusterstack.x-k8s.io/stage';
export const LABEL_LAYER = 'clusterstack.x-k8s.io/layer';
export const LABEL_LAYER_VERSION = 'clusterstack.x-k8s.io/layer-version';

/** What a wiring object applies: the value of LABEL_WIRING. */
export type WiringRole =
  | 'source'
  | 'root'
  | 'shared'
  | 'release'
  | 'cluster'
  | 'cluster-stage'
  | 'cluster-layer'
  | 'cluster-requests'
  | 'helm-hooks';

const MAX_LABEL = 63;
const HASH_LENGTH = 8;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function shortHash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, HASH_LENGTH);
}

/**
 * A DNS-1123 label from `parts` joined by "-": lowercased, other characters replaced by "-", and
 * when longer than 63 cut short and ended with a hash of the whole, so it stays unique and stable.
 * Flux and Argo CD copy these names into label values on what they apply, hence 63, not 253.
 */
function dnsLabel(...parts: string[]): string {
  const joined = parts.join('-');
  const slug = joined
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (slug.length <= MAX_LABEL && slug !== '') return slug;
  const head = slug.slice(0, MAX_LABEL - HASH_LENGTH - 1).replace(/-+$/, '');
  return head === '' ? shortHash(joined) : `${head}-${shortHash(joined)}`;
}

/** `value` when it is a valid label value, otherwise a sanitized one (same rule as dnsLabel, case kept). */
export function labelValue(value: string): string {
  if (value.length <= MAX_LABEL && LABEL_VALUE.test(value)) return value;
  const slug = value.replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  if (slug.length <= MAX_LABEL && slug !== '') return slug;
  const head = slug.slice(0, MAX_LABEL - HASH_LENGTH - 1).replace(/[^A-Za-z0-9]+$/, '');
  return head === '' ? shortHash(value) : `${head}-${shortHash(value)}`;
}

/** The Flux Kustomization (in the wiring namespace) applying a release's management directory. */
export function fluxReleaseKustomizationName(namespace: string, release: string): string {
  return dnsLabel(namespace, release);
}

/** The Flux Kustomization (in the wiring namespace) applying a namespace's shared directory. */
export function fluxSharedKustomizationName(namespace: string): string {
  return dnsLabel(namespace, 'shared');
}

/** The Argo CD Application applying a namespace's shared directory. */
export function argoSharedApplicationName(namespace: string): string {
  return dnsLabel(namespace, 'shared');
}

/** The Flux Kustomization (in the cluster's namespace) applying one addon stage to a workload cluster. */
export function fluxStageKustomizationName(cluster: string, stage: string): string {
  return dnsLabel(cluster, stage);
}

/** The Flux Kustomization applying one unit's helm hooks of one phase and weight: `<unit's Kustomization>-pre-hooks-w0`. */
export function fluxHookKustomizationName(unitKustomization: string, phase: 'pre' | 'post', weight: number): string {
  return dnsLabel(unitKustomization, `${phase}-hooks-w${weight}`);
}

/**
 * The Flux Kustomization (in the cluster's namespace) applying one addon layer:
 * `<cluster>-layer-<layer>`, the same for every version of the layer. A version bump then changes
 * only what the Kustomization applies, and Flux's garbage collection prunes what the new version
 * no longer has while keeping (never re-creating) what both versions have; a name carrying the
 * version would make every bump a delete of one Kustomization and a create of another.
 */
export function fluxLayerKustomizationName(cluster: string, layer: string): string {
  return dnsLabel(cluster, 'layer', layer);
}

/** The Argo CD Application applying one addon layer to a workload cluster (no version: renaming it would delete what it applied). */
export function argoLayerApplicationName(namespace: string, cluster: string, layer: string): string {
  return dnsLabel(namespace, cluster, 'layer', layer);
}

/** The Argo CD Application applying a release's management directory. */
export function argoReleaseApplicationName(namespace: string, release: string): string {
  return dnsLabel(namespace, release);
}

/** The per-cluster parent Argo CD Application (app of apps) holding one child Application per stage. */
export function argoClusterApplicationName(namespace: string, cluster: string): string {
  return dnsLabel(namespace, cluster);
}

/** The Argo CD Application applying one addon stage to a workload cluster. */
export function argoStageApplicationName(namespace: string, cluster: string, stage: string): string {
  return dnsLabel(namespace, cluster, stage);
}

/**
 * Refuses two different things mapped to one object name (`<ns>-<a>` joins are ambiguous when names
 * contain "-"). Renaming one of them silently would rename it again whenever the other one comes or
 * goes, so the user is asked to resolve it instead.
 */
export function assertUniqueNames(kind: string, entries: { namespace: string; name: string; what: string }[]): void {
  const seen = new Map<string, string>();
  const problems: string[] = [];
  for (const entry of entries) {
    const key = `${entry.namespace}/${entry.name}`;
    const other = seen.get(key);
    if (other !== undefined && other !== entry.what)
      problems.push(`${other} and ${entry.what} would both be ${kind} ${key}; rename one of them`);
    else seen.set(key, entry.what);
  }
  if (problems.length > 0) throw new InputError(problems.map((message) => ({ object: 'GitOps wiring', message })));
}
