// One unit's helm output as the files of its directory: objects read with Kubernetes' meaning,
// placed (namespace, annotations), filtered by the secret policy, named one per file.
import type { KubeObject } from '../api/types.js';
import type { HelmHookRecord, HookPlacement } from '../output/helm-hooks-record.js';
import { placeHelmHooks } from './helm-hooks.js';
import { placeObjects, readManifests } from './manifest-objects.js';
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

/** One unit's helm output as files; throws SecretRefusedError when the policy refuses an object. */
export function unitFiles(output: string, unit: PendingUnit, policy: SecretPolicy, annotationsFor?: AnnotationsFor, hookPlacement: HookPlacement = 'staged'): UnitFiles {
  const subject =
    unit.record.kind === 'release'
      ? `release ${unit.record.release}`
      : unit.record.layer
        ? `Cluster ${unit.record.namespace}/${unit.record.name} (layer ${unit.record.layer.name}@${unit.record.layer.version})`
        : `Cluster ${unit.record.namespace}/${unit.record.name} (stage ${unit.record.stage}, release ${unit.record.release})`;
  const reading = readManifests(output, `${unit.chart.origin} for ${subject}`);
  if (reading.problems.length > 0) return { files: new Map(), problems: reading.problems, notes: [], secrets: [], hooks: [] };
  const placed = placeObjects(reading.objects, {
    defaultNamespace: unit.defaultNamespace,
    ...(unit.annotated && annotationsFor ? { annotationsFor } : {}),
  });
  const kept = applySecretPolicy(placed.objects, policy, subject);
  const dropped = kept.dropped.map((finding) => `${finding.object.kind} ${finding.object.metadata.namespace ? `${finding.object.metadata.namespace}/` : ''}${finding.object.metadata.name} left out (--secrets drop): it ${finding.why}`);
  // Hooks go where the engine runs them at helm's events, or are left out (helm-hooks.ts).
  const { files: names, hooks } = placeHelmHooks(kept.objects.map((entry) => entry.object), unit.defaultNamespace, hookPlacement);
  return {
    files: new Map(kept.objects.flatMap((entry, index) => (names[index] === undefined ? [] : [[names[index], entry.text] as const]))),
    problems: [],
    notes: [...reading.warnings, ...placed.notes, ...dropped],
    secrets: kept.objects.flatMap((entry, index) => (kept.toEncrypt.has(entry) && names[index] !== undefined ? [{ file: names[index], object: entry.object }] : [])),
    hooks,
  };
}

