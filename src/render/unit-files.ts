// One unit's helm output as the files of its directory: objects read with Kubernetes' meaning,
// placed (namespace, annotations), filtered by the secret policy, named one per file.
import { layerRef } from '../core/layer-version.js';
import type { KubeObject } from '../api/types.js';
import { servedApiProblem } from '../core/kube-api-versions.js';
import type { HookPhases } from '../core/engine-rules.js';
import type { HelmHookRecord } from '../output/helm-hooks-record.js';
import { placeHelmHooks } from './helm-hooks.js';
import { type ManifestObject, placeObjects, readManifests } from './manifest-objects.js';
import type { PendingUnit } from './render-units.js';
import { applySecretPolicy, type SecretPolicy } from './secret-policy.js';

/** Annotations for management-side objects, by object (e.g. Argo CD sync waves); undefined adds none. */
export type AnnotationsFor = (object: KubeObject) => Record<string, string> | undefined;

export interface UnitFiles {
  files: Map<string, string>;
  /** Why the unit cannot be published (documents Kubernetes would refuse). */
  problems: string[];
  notes: string[];
  /** With --secrets encrypt: the files holding Secrets, whose content is still helm's plaintext and must be encrypted before anything else sees it. */
  secrets: { file: string; object: KubeObject }[];
  /** The helm hook objects and what became of each (helm-hooks.ts). */
  hooks: HelmHookRecord[];
}

/**
 * Why a unit that renders no object is withheld rather than published empty: an empty directory
 * makes Argo CD or Flux prune everything the unit applied before (a ClusterClass in use, a CNI).
 * The cluster-stack-operator's clusteraddon.yaml cannot mark a stage as meant to be empty, so no
 * unit may be (README, Withheld).
 */
function emptyRenderProblem(unit: PendingUnit, subject: string): string {
  const what = unit.manifests !== undefined ? `the manifests of ${unit.chart.origin}` : `${unit.chart.origin}`;
  const check =
    unit.manifests !== undefined
      ? 'add its objects to that directory'
      : 'check that its templates are not all behind a value left unset, and that helm (--helm) prints what it renders';
  return `${what} for ${subject} renders no object (no document, or only empty ones and comments); publishing it empty would prune what it applied before, so it is withheld: ${check}`;
}

/** One unit's helm output as files; throws SecretRefusedError when the policy refuses an object. */
export function unitFiles(
  output: string,
  unit: PendingUnit,
  policy: SecretPolicy,
  annotationsFor?: AnnotationsFor,
  hookPhases?: HookPhases,
): UnitFiles {
  const subject =
    unit.record.kind === 'release'
      ? `release ${unit.record.release}`
      : unit.record.layer
        ? `Cluster ${unit.record.namespace}/${unit.record.name} (layer ${layerRef(unit.record.layer.name, unit.record.layer.version)})`
        : `Cluster ${unit.record.namespace}/${unit.record.name} (stage ${unit.record.stage}, release ${unit.record.release})`;
  const reading = readManifests(output, `${unit.chart.origin} for ${subject}`);
  if (reading.problems.length > 0)
    return { files: new Map(), problems: reading.problems, notes: [], secrets: [], hooks: [] };
  if (reading.objects.length === 0)
    return { files: new Map(), problems: [emptyRenderProblem(unit, subject)], notes: [], secrets: [], hooks: [] };
  // A workload cluster refuses an API its version no longer (or not yet) serves: withheld here, not
  // failed at apply. Helm's own API list can still offer one (src/core/kube-api-versions.ts).
  const unserved = unit.record.kind === 'release' ? [] : unservedApis(reading.objects, unit, subject);
  if (unserved.length > 0) return { files: new Map(), problems: unserved, notes: [], secrets: [], hooks: [] };
  const placed = placeObjects(reading.objects, {
    defaultNamespace: unit.defaultNamespace,
    ...(unit.annotated && annotationsFor ? { annotationsFor } : {}),
  });
  const kept = applySecretPolicy(placed.objects, policy, subject);
  const dropped = kept.dropped.map(
    (finding) =>
      `${finding.object.kind} ${finding.object.metadata.namespace ? `${finding.object.metadata.namespace}/` : ''}${finding.object.metadata.name} left out (--secrets drop): it ${finding.why}`,
  );
  // Hooks go where the engine runs them at helm's events, or are left out (helm-hooks.ts).
  const { files: names, hooks } = placeHelmHooks(
    kept.objects.map((entry) => entry.object),
    unit.defaultNamespace,
    hookPhases,
  );
  return {
    files: new Map(
      kept.objects.flatMap((entry, index) => (names[index] === undefined ? [] : [[names[index], entry.text] as const])),
    ),
    problems: [],
    notes: [...reading.warnings, ...placed.notes, ...dropped],
    secrets: kept.objects.flatMap((entry, index) =>
      kept.toEncrypt.has(entry) && names[index] !== undefined ? [{ file: names[index], object: entry.object }] : [],
    ),
    hooks,
  };
}

function unservedApis(objects: ManifestObject[], unit: PendingUnit, subject: string): string[] {
  return objects.flatMap(({ object }) => {
    const problem =
      typeof object.apiVersion === 'string' ? servedApiProblem(object.apiVersion, unit.kubeVersion) : undefined;
    if (!problem) return [];
    const name = `${object.kind} ${object.metadata?.namespace ? `${object.metadata.namespace}/` : ''}${object.metadata?.name}`;
    return [
      `${unit.chart.origin} for ${subject}: ${name}: ${problem}, so the cluster would refuse it. Helm chose it from its own API list, which clusterstack can add to but not shrink; set the chart's values to an API version the cluster serves, or use a chart that checks for the newer version first`,
    ];
  });
}
