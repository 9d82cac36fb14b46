// The mass-deletion guard: a render that would take away all, or more than a set share, of what is
// published is refused unless the user says it is meant. Argo CD and Flux prune whatever leaves the
// output, so a wrong input path, an unmounted volume or a failed checkout would otherwise delete
// every ClusterClass and every cluster's addons. Pure: the callers read the previous and the new
// provenance (CLI render path, controller).
import { stackPrefix, tryParseReleaseTag } from './release-tag.js';
import { channelOf } from './stack-version.js';

/** One unit of published output, as provenance records it (render-output's UnitRecord fits). */
export interface PublishedUnit {
  kind: 'release' | 'cluster-stage' | string;
  namespace: string;
  /** The release tag, or the cluster name. */
  name: string;
  /** The release the unit renders. */
  release: string;
}

export interface MassDeletionPolicy {
  /** `--allow-mass-delete`: the user means it; nothing is refused. */
  allow: boolean;
  /** Largest share (0..1) of published releases or clusters one render may remove; 1 allows everything. */
  maxShare: number;
}

interface DeletionCount {
  /** How many were published before. */
  published: number;
  /** `namespace/name` of those that would go, sorted. */
  removed: string[];
}

export interface MassDeletionVerdict {
  refused: boolean;
  /** Releases that go without another release of their stack staying (a new release replacing an old one is routine). */
  releases: DeletionCount;
  clusters: DeletionCount;
  /** Why the render is refused and what to do; set when refused. */
  message?: string;
}

/** The stack and channel a release belongs to: a newer release of the same line replaces it. */
function releaseLine(unit: PublishedUnit): string {
  const tag = tryParseReleaseTag(unit.release);
  return tag ? `${unit.namespace}/${stackPrefix(tag)}/${channelOf(tag.version)}` : `${unit.namespace}/${unit.release}`;
}

interface Published {
  releases: Map<string, string>;
  clusters: Set<string>;
}

function published(units: readonly PublishedUnit[]): Published {
  const releases = new Map<string, string>();
  const clusters = new Set<string>();
  for (const unit of units) {
    if (unit.kind === 'release') releases.set(`${unit.namespace}/${unit.name}`, releaseLine(unit));
    else clusters.add(`${unit.namespace}/${unit.name}`);
  }
  return { releases, clusters };
}

function exceeds(count: DeletionCount, maxShare: number): boolean {
  if (count.published === 0 || count.removed.length === 0) return false;
  if (count.removed.length === count.published) return maxShare < 1;
  return count.removed.length / count.published > maxShare;
}

function names(list: string[]): string {
  const shown = list.slice(0, 10).join(', ');
  return list.length > 10 ? `${shown} and ${list.length - 10} more` : shown;
}

function percent(share: number): string {
  return `${Math.round(share * 1000) / 10}%`;
}

/**
 * Compares what is published (`previous`, from the target's provenance) with what a render would
 * publish (`next`). Refuses when all, or more than `maxShare`, of the published clusters would go,
 * or of the published releases without another release of their stack and channel staying.
 */
export function checkMassDeletion(
  previous: readonly PublishedUnit[],
  next: readonly PublishedUnit[],
  policy: MassDeletionPolicy,
): MassDeletionVerdict {
  const before = published(previous);
  const after = published(next);
  const linesAfter = new Set(after.releases.values());
  const releases: DeletionCount = {
    published: before.releases.size,
    removed: [...before.releases]
      .filter(([key, line]) => !after.releases.has(key) && !linesAfter.has(line))
      .map(([key]) => key)
      .sort(),
  };
  const clusters: DeletionCount = {
    published: before.clusters.size,
    removed: [...before.clusters].filter((key) => !after.clusters.has(key)).sort(),
  };
  const over = [
    ...(exceeds(releases, policy.maxShare)
      ? [
          `${releases.removed.length} of ${releases.published} published releases (${names(releases.removed)}), leaving their stacks without any release`,
        ]
      : []),
    ...(exceeds(clusters, policy.maxShare)
      ? [`${clusters.removed.length} of ${clusters.published} published clusters (${names(clusters.removed)})`]
      : []),
  ];
  if (policy.allow || over.length === 0) return { refused: false, releases, clusters };
  return {
    refused: true,
    releases,
    clusters,
    message:
      `this render would remove ${over.join(' and ')}, more than the ${percent(policy.maxShare)} one render may remove (--max-delete-share); ` +
      'Argo CD or Flux would then delete them. Nothing was written. If the inputs are wrong (an empty or unmounted directory, a wrong path, a failed checkout), fix them; ' +
      'if the removal is meant, run again with --allow-mass-delete',
  };
}

/** The units a provenance record lists (provenance.json's `units`), or none when it is absent or unreadable. */
export function unitsOfProvenance(text: string | undefined): PublishedUnit[] {
  if (text === undefined) return [];
  try {
    return publishedUnitsOf((JSON.parse(text) as { units?: unknown }).units);
  } catch {
    return [];
  }
}

/** The well-formed units of a parsed provenance record's `units`, or none when it is not a list. */
export function publishedUnitsOf(units: unknown): PublishedUnit[] {
  if (!Array.isArray(units)) return [];
  return units.filter(
    (unit): unit is PublishedUnit =>
      typeof unit === 'object' &&
      unit !== null &&
      typeof unit.kind === 'string' &&
      typeof unit.namespace === 'string' &&
      typeof unit.name === 'string' &&
      typeof unit.release === 'string',
  );
}
