// What a render changed compared with the target's previous tree, per release and per cluster:
// the data behind commit messages, pull request bodies and reports.
import type { Provenance, UnitRecord, WithheldEntry } from './provenance.js';
import type { PublishedState } from './published-state.js';
import { compareProviders, describeProviderChange, type ProviderChange } from './provider-changes.js';
import type { RenderedTree } from './rendered-tree.js';
import {
  clusterDir,
  isSharedPath,
  KUSTOMIZATION_FILE,
  MANAGEMENT_DIR,
  PROVIDERS_DIR,
  requestedClusterOfPath,
  unitDirOf,
  unitOfPath,
} from './tree-layout.js';

export type ChangeKind = 'added' | 'removed' | 'updated';

interface ReleaseChange {
  namespace: string;
  release: string;
  change: ChangeKind;
}

interface ClusterChange {
  namespace: string;
  cluster: string;
  change: ChangeKind;
  releaseBefore?: string;
  releaseAfter?: string;
  addonVersionBefore?: string;
  addonVersionAfter?: string;
  /** Stage directories whose files changed (a layer's as `layers/<layer>`). */
  stages: string[];
}

export interface TreeChanges {
  releases: ReleaseChange[];
  clusters: ClusterChange[];
  withheld: WithheldEntry[];
  /** Objects in shared directories (`management/<ns>/shared/`) that were added, removed or changed. */
  shared?: { path: string; change: ChangeKind }[];
  /** Clusters made for ClusterRequests (management/_cluster-requests/clusters/) that changed. */
  requestedClusters?: { namespace: string; name: string; change: ChangeKind }[];
  /** Files outside units (README, provenance, kustomizations) changed too. */
  otherFiles: string[];
  /** Cluster API providers added, removed, upgraded or downgraded (management/providers/). */
  providers?: ProviderChange[];
}

/** What changed, for commit messages, PR bodies and reports. */
export interface ChangeSummary {
  /** One line: what this render changed. */
  title: string;
  /** Markdown or plain text body. */
  body: string;
  /** Git trailers, e.g. { 'Clusterstack-Input-Digest': 'sha256:...' }. */
  trailers: Record<string, string>;
  /** Pull-request mode: the PR's title and (Markdown) body; `title` and `body` when absent. */
  pullRequest?: { title: string; body: string };
}

const INPUT_DIGEST_TRAILER = 'Clusterstack-Input-Digest';

/** Whose changes a file's are: a release directory's, or a cluster's (its stage named). */
export interface FileOwner {
  owner: string;
  kind: 'release' | 'cluster';
  stage?: string;
}

/** The owner a file's changes are reported under: a release directory, or a cluster (stages below it). */
export function ownerOfFile(file: string): FileOwner | undefined {
  if (unitDirOf(file) === undefined || isSharedPath(file)) return undefined;
  const unit = unitOfPath(file);
  if (unit?.kind === 'release') return { owner: unit.dir, kind: 'release' };
  if (unit?.kind === 'cluster-stage') return { owner: unit.clusterDir, kind: 'cluster', stage: unit.stage };
  if (unit?.kind === 'cluster-layer') return { owner: unit.clusterDir, kind: 'cluster', stage: `layers/${unit.layer}` };
  return undefined;
}

/**
 * ownerOfFile with one answer per directory: it looks at a file's directory only (never at its
 * name), and a tree has thousands of files in a few hundred directories.
 */
export function ownerOfFileByDirectory(): (file: string) => FileOwner | undefined {
  const byDirectory = new Map<string, FileOwner | undefined>();
  return (file) => {
    const directory = file.slice(0, file.lastIndexOf('/') + 1);
    if (byDirectory.has(directory)) return byDirectory.get(directory);
    const owner = ownerOfFile(file);
    byDirectory.set(directory, owner);
    return owner;
  };
}

function ownersOf(tree: RenderedTree, ownerOf: (file: string) => FileOwner | undefined): Set<string> {
  const owners = new Set<string>();
  for (const file of tree.keys()) {
    const unit = ownerOf(file);
    if (unit) owners.add(unit.owner);
  }
  return owners;
}

/**
 * Whether `tree` has files of each of `owners`. For a few owners (a render that changed a cluster
 * or two) the files under each owner's directory are looked at, not every file of the tree.
 */
function ownerPresence(
  tree: RenderedTree,
  owners: readonly string[],
  ownerOf: (file: string) => FileOwner | undefined,
): (owner: string) => boolean {
  if (owners.length > 16) {
    const all = ownersOf(tree, ownerOf);
    return (owner) => all.has(owner);
  }
  const present = new Set<string>();
  for (const owner of owners) {
    for (const file of tree.keys()) {
      if (file.startsWith(`${owner}/`) && ownerOf(file)?.owner === owner) {
        present.add(owner);
        break;
      }
    }
  }
  return (owner) => present.has(owner);
}

function clusterUnits(provenance: Provenance | undefined, owner: string): UnitRecord[] {
  return (provenance?.units ?? []).filter(
    (unit) => unit.kind === 'cluster-stage' && clusterDir(unit.namespace, unit.name) === owner,
  );
}

/** A tree and its provenance record, as the published state holds them (the next tree's from its render). */
type RecordedTree = Pick<PublishedState, 'tree' | 'provenance'>;

/** Compares two trees unit by unit, by their records. */
export function compareTrees(
  { tree: previous, provenance: before }: RecordedTree,
  { tree: next, provenance: after }: RecordedTree,
): TreeChanges {
  // The files of either tree that differ, in the order of their union (previous first), without
  // building that union: a fleet's trees hold tens of thousands of files each.
  const changedFiles = new Set<string>();
  for (const [file, content] of previous) if (next.get(file) !== content) changedFiles.add(file);
  for (const file of next.keys()) if (!previous.has(file)) changedFiles.add(file);
  const changes: TreeChanges = {
    releases: [],
    clusters: [],
    withheld: after?.withheld ?? [],
    shared: [],
    otherFiles: [],
  };
  const changedStages = new Map<string, Set<string>>();
  const ownerOf = ownerOfFileByDirectory();
  for (const file of changedFiles) {
    const unit = ownerOf(file);
    const requested = requestedClusterOfPath(file);
    if (requested) {
      const change: ChangeKind = !previous.has(file) ? 'added' : !next.has(file) ? 'removed' : 'updated';
      (changes.requestedClusters ??= []).push({ ...requested, change });
    }
    if (!unit) {
      if (isSharedPath(file) && !file.endsWith(`/${KUSTOMIZATION_FILE}`))
        changes.shared!.push({
          path: file,
          change: !previous.has(file) ? 'added' : !next.has(file) ? 'removed' : 'updated',
        });
      else changes.otherFiles.push(file);
      continue;
    }
    if (!changedStages.has(unit.owner)) changedStages.set(unit.owner, new Set());
    if (unit.stage && !file.endsWith('/kustomization.yaml')) changedStages.get(unit.owner)!.add(unit.stage);
    else if (unit.stage === undefined) changedStages.get(unit.owner)!.add('');
  }
  const changedOwners = [...changedStages.keys()].sort();
  const hadOwner = ownerPresence(previous, changedOwners, ownerOf);
  const hasOwner = ownerPresence(next, changedOwners, ownerOf);
  for (const owner of changedOwners) {
    const [root, namespace, name] = owner.split('/') as [string, string, string];
    const change: ChangeKind = !hadOwner(owner) ? 'added' : !hasOwner(owner) ? 'removed' : 'updated';
    if (root === MANAGEMENT_DIR) {
      changes.releases.push({ namespace, release: name, change });
      continue;
    }
    const unitsBefore = clusterUnits(before, owner);
    const unitsAfter = clusterUnits(after, owner);
    const entry: ClusterChange = {
      namespace,
      cluster: name,
      change,
      stages: [...(changedStages.get(owner) ?? [])].filter(Boolean).sort(),
    };
    if (unitsBefore[0]) {
      entry.releaseBefore = unitsBefore[0].release;
      if (unitsBefore[0].addonVersion) entry.addonVersionBefore = unitsBefore[0].addonVersion;
    }
    if (unitsAfter[0]) {
      entry.releaseAfter = unitsAfter[0].release;
      if (unitsAfter[0].addonVersion) entry.addonVersionAfter = unitsAfter[0].addonVersion;
    }
    changes.clusters.push(entry);
  }
  changes.otherFiles.sort();
  // Code-unit order, compareText's (src/output imports nothing outside itself).
  changes.shared!.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const providers = compareProviders(before, after, changedFiles);
  if (providers.length > 0) {
    changes.providers = providers;
    // Provider files are reported per provider, not as loose files.
    changes.otherFiles = changes.otherFiles.filter((file) => !file.startsWith(`${PROVIDERS_DIR}/`));
  }
  return changes;
}

function describeCluster(change: ClusterChange): string {
  const subject = `Cluster ${change.namespace}/${change.cluster}`;
  if (change.change === 'added')
    return `${subject}: addons ${change.addonVersionAfter ?? ''} from ${change.releaseAfter ?? '?'} added`;
  if (change.change === 'removed') return `${subject}: addons removed (was ${change.releaseBefore ?? '?'})`;
  const addon =
    change.addonVersionBefore !== change.addonVersionAfter
      ? `addons ${change.addonVersionBefore} -> ${change.addonVersionAfter}`
      : `addons ${change.addonVersionAfter} updated`;
  const stages = change.stages.length > 0 ? ` (${change.stages.join(', ')})` : '';
  return `${subject}: ${addon}${stages}`;
}

/** A commit-sized summary: a title line, a body per release and cluster, and trailers. */
export function summarizeChanges(changes: TreeChanges, inputDigest: string): ChangeSummary {
  const count = (kind: ChangeKind, list: { change: ChangeKind }[]): number =>
    list.filter((entry) => entry.change === kind).length;
  const parts: string[] = [];
  const releaseParts = (['added', 'removed', 'updated'] as const)
    .map((kind) => [kind, count(kind, changes.releases)] as const)
    .filter(([, n]) => n > 0);
  for (const [kind, n] of releaseParts) parts.push(`${n} release${n === 1 ? '' : 's'} ${kind}`);
  const clusterParts = (['added', 'removed', 'updated'] as const)
    .map((kind) => [kind, count(kind, changes.clusters)] as const)
    .filter(([, n]) => n > 0);
  for (const [kind, n] of clusterParts) parts.push(`${n} cluster${n === 1 ? '' : 's'} ${kind}`);
  const sharedCount = changes.shared?.length ?? 0;
  if (sharedCount > 0) parts.push(`${sharedCount} shared object${sharedCount === 1 ? '' : 's'} changed`);
  const providerCount = changes.providers?.length ?? 0;
  if (providerCount > 0) parts.push(`${providerCount} provider${providerCount === 1 ? '' : 's'} changed`);
  const requested = changes.requestedClusters ?? [];
  for (const kind of ['added', 'removed', 'updated'] as const) {
    const n = count(kind, requested);
    if (n > 0) parts.push(`${n} requested Cluster${n === 1 ? '' : 's'} ${kind}`);
  }
  const title = `Render cluster stacks: ${parts.length > 0 ? parts.join(', ') : 'README and provenance updated'}`;
  const lines: string[] = [];
  for (const release of changes.releases)
    lines.push(`- ClusterClass release ${release.namespace}/${release.release} ${release.change}`);
  for (const cluster of changes.clusters) lines.push(`- ${describeCluster(cluster)}`);
  for (const shared of changes.shared ?? []) lines.push(`- Shared object ${shared.path} ${shared.change}`);
  for (const provider of changes.providers ?? []) lines.push(`- ${describeProviderChange(provider)}`);
  for (const cluster of requested)
    lines.push(`- Cluster ${cluster.namespace}/${cluster.name} for ClusterRequests ${cluster.change}`);
  for (const entry of changes.withheld)
    lines.push(
      `- Withheld ${entry.kind} ${entry.namespace}/${entry.name}${entry.layer ? ` layer ${entry.layer}` : ''}: ${entry.reason}${entry.previousKept ? ' (previous output kept)' : ''}`,
    );
  return { title, body: lines.join('\n'), trailers: { [INPUT_DIGEST_TRAILER]: inputDigest } };
}
