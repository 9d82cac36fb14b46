// Everything the controller wants the API server to hold after one reconcile, computed from what it
// observed, rendered and published. Pure: the reconcilers apply it.
import type { ClusterAddon, ClusterStackRelease, KubeObject } from '../../api/types.js';
import { sameCanonicalJson } from '../../render/canonical-json.js';
import { desiredAddons, type DesiredAddon } from './cluster-addon-state.js';
import { desiredReleases, type DesiredRelease } from './cluster-stack-release-state.js';
import { desiredStacks, type DesiredStack } from './cluster-stack-status.js';
import type { EventIntent } from './event-intents.js';
import { desiredProviderReleases, type DesiredProviderRelease } from './provider-release-state.js';
import type { StatusInputs } from './status-inputs.js';
import { desiredCapiProviderStatuses, type DesiredProviderStatus } from './capi-provider-status.js';

export interface DesiredState {
  stacks: DesiredStack[];
  releases: DesiredRelease[];
  releasesToDelete: ClusterStackRelease[];
  addons: DesiredAddon[];
  addonsToDelete: ClusterAddon[];
  providerReleases: DesiredProviderRelease[];
  providerReleasesToDelete: KubeObject[];
  /** Statuses of Cluster API provider objects (status only, never spec). */
  capiProviders: DesiredProviderStatus[];
  events: EventIntent[];
}

/** What every object we manage should look like, and the events worth recording. */
export function desiredState(input: StatusInputs): DesiredState {
  const stacks = desiredStacks(input);
  const releases = desiredReleases(input);
  const addons = desiredAddons(input);
  const providers = desiredProviderReleases(input);
  return {
    stacks: stacks.stacks,
    releases: releases.releases,
    releasesToDelete: releases.toDelete,
    addons: addons.addons,
    addonsToDelete: addons.toDelete,
    providerReleases: providers.releases,
    providerReleasesToDelete: providers.toDelete,
    capiProviders: desiredCapiProviderStatuses(input),
    events: [...stacks.events, ...releases.events, ...addons.events],
  };
}

/** Whether two statuses say the same (key order and undefined fields aside). */
export function sameStatus(current: unknown, desired: unknown): boolean {
  return sameCanonicalJson(current ?? {}, desired ?? {});
}

/** Whether `actual` holds everything `wanted` says; fields the API server or a webhook defaulted are extra, not drift. */
function contains(actual: unknown, wanted: unknown): boolean {
  if (wanted === null || typeof wanted !== 'object' || Array.isArray(wanted)) return sameCanonicalJson(actual, wanted);
  if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
  return Object.entries(wanted as Record<string, unknown>).every(
    ([key, value]) => value === undefined || contains((actual as Record<string, unknown>)[key], value),
  );
}

export interface OwnedObjectDrift {
  labels?: Record<string, string>;
  /** Only the annotations we set (a merge patch leaves others alone). */
  annotations?: Record<string, string>;
  ownerReferences?: unknown[];
  spec?: unknown;
}

/**
 * The metadata and spec fields of `desired` that `live` does not match: labels and owner
 * references we set (others' labels are kept), and the spec when it lacks or differs in a field we
 * set (then replaced as a whole). Undefined when nothing differs.
 */
export function ownedObjectDrift(live: KubeObject, desired: KubeObject): OwnedObjectDrift | undefined {
  const drift: OwnedObjectDrift = {};
  const labels = desired.metadata.labels ?? {};
  if (Object.entries(labels).some(([key, value]) => live.metadata.labels?.[key] !== value))
    drift.labels = { ...live.metadata.labels, ...labels };
  const annotations = desired.metadata.annotations ?? {};
  if (Object.entries(annotations).some(([key, value]) => live.metadata.annotations?.[key] !== value))
    drift.annotations = annotations;
  const wanted = desired.metadata.ownerReferences ?? [];
  const have = live.metadata.ownerReferences ?? [];
  const missing = wanted.filter(
    (ref) => !have.some((existing) => existing.uid === ref.uid && existing.kind === ref.kind),
  );
  if (missing.length > 0)
    drift.ownerReferences = [
      ...have.filter((existing) => !(existing.controller && missing.some((ref) => ref.controller))),
      ...missing,
    ];
  if ('spec' in desired && !contains(live['spec'] ?? {}, desired['spec'] ?? {})) drift.spec = desired['spec'];
  return Object.keys(drift).length > 0 ? drift : undefined;
}
