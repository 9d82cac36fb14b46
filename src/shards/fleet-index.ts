// The fleet-wide index of a sharded tree: `<path>/shards/README.md`, beside the shards' subtrees. It
// says which shards publish there and what each holds (Clusters, releases, providers, with counts),
// and links each shard's own README. It is the one file the shards share, so no shard may own it:
// it is derived, a pure function of the subtrees present in the tree being committed (their
// provenance.json). Every shard commit recomputes it from the branch head it builds on plus its own
// new subtree, and a push that loses the race recomputes it on the new head, so the last commit
// always holds the index of exactly the subtrees on the branch, whichever shard made it.
// It lives in `shards/` and not at `<path>/README.md`: the shards own `shards/` and nothing beside
// it (with the default --path, `<path>/README.md` is the repository's own front page). Pure.
import { compareText } from '../core/compare-text.js';
import { readPublishedState } from '../output/published-state.js';
import type { Provenance } from '../output/provenance.js';
import { PROVENANCE_FILE, README_FILE } from '../output/tree-layout.js';

/** The index's name inside the shards directory (a shard's name is a DNS label: never `README.md`). */
export const FLEET_INDEX_FILE = README_FILE;

/** What one shard's subtree holds, as the index shows it. */
export interface ShardSummary {
  /** False when the subtree has no readable provenance.json (then it holds nothing the index can name). */
  readable: boolean;
  /** `namespace/name`, sorted: the Clusters whose addons (stages or layers) it publishes. */
  clusters: string[];
  /** `namespace/release`, sorted: the releases (ClusterClass side) it publishes. */
  releases: string[];
  /** `Kind namespace/name`, sorted: the Cluster API providers it publishes. */
  providers: string[];
  /** How many releases, Clusters, providers or layers it withholds. */
  withheld: number;
}

/** The record of another shard's provenance.json; undefined when missing, or too damaged for even readPublishedState. */
function provenanceOf(text: string | undefined): Provenance | undefined {
  if (text === undefined) return undefined;
  try {
    return readPublishedState(new Map([[PROVENANCE_FILE, text]])).provenance;
  } catch {
    return undefined;
  }
}

const UNREADABLE: ShardSummary = Object.freeze({
  readable: false,
  clusters: [],
  releases: [],
  providers: [],
  withheld: 0,
});

/** What a shard's provenance.json (undefined: none) says its subtree holds. */
export function summarizeShard(provenanceText: string | undefined): ShardSummary {
  const provenance = provenanceOf(provenanceText);
  // Another shard's record, maybe of another version or damaged: only what has the expected shape counts.
  if (typeof provenance !== 'object' || provenance === null || !Array.isArray(provenance.units))
    return { ...UNREADABLE };
  const entries = <T>(list: readonly T[] | undefined): T[] =>
    (Array.isArray(list) ? list : []).filter((entry) => typeof entry === 'object' && entry !== null);
  const clusters = new Set<string>();
  const releases = new Set<string>();
  for (const unit of entries(provenance.units)) {
    if (unit.kind === 'release') releases.add(`${unit.namespace}/${unit.release}`);
    else clusters.add(`${unit.namespace}/${unit.name}`);
  }
  const providers = entries(provenance.providers).map(
    (provider) => `${provider.kind} ${provider.namespace}/${provider.name}`,
  );
  return {
    readable: true,
    clusters: [...clusters].sort(compareText),
    releases: [...releases].sort(compareText),
    providers: [...new Set(providers)].sort(compareText),
    withheld: entries(provenance.withheld).length,
  };
}

/** `fleet` (3): a, b, c — one line per namespace, so a fleet of thousands stays readable. */
function byNamespace(keys: readonly string[]): string[] {
  const groups = new Map<string, string[]>();
  for (const key of keys) {
    const slash = key.indexOf('/');
    const [namespace, name] = [key.slice(0, slash), key.slice(slash + 1)];
    const names = groups.get(namespace) ?? [];
    names.push(name);
    groups.set(namespace, names);
  }
  return [...groups].map(([namespace, names]) => `- \`${namespace}\` (${names.length}): ${names.join(', ')}`);
}

/** `1 Cluster`, `2 Clusters`. */
function counted(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** What more than one shard publishes (a handover in progress), with the shards, sorted. */
function publishedTwice(shards: readonly [string, ShardSummary][], field: 'clusters' | 'releases'): string[] {
  const what = field === 'clusters' ? 'Cluster' : 'release';
  const owners = new Map<string, string[]>();
  for (const [shard, summary] of shards)
    for (const key of summary[field]) owners.set(key, [...(owners.get(key) ?? []), shard]);
  return [...owners]
    .filter(([, names]) => names.length > 1)
    .sort(([a], [b]) => compareText(a, b))
    .map(([key, names]) => `${what} ${key}: ${names.join(', ')}`);
}

/**
 * The index's bytes for the shards' subtrees present (shard name -> summary), in any order: the
 * same subtrees give the same bytes, whichever shard computes them. `treeDir` is where a shard's
 * tree lies inside its directory ('' in Git; `current/` in an --output directory).
 */
export function renderFleetIndex(subtrees: ReadonlyMap<string, ShardSummary>, treeDir = ''): string {
  const shards = [...subtrees].sort(([a], [b]) => compareText(a, b));
  const total = (field: 'clusters' | 'releases') => new Set(shards.flatMap(([, summary]) => summary[field])).size;
  const totals = [
    counted(shards.length, 'shard'),
    counted(total('clusters'), 'Cluster'),
    counted(total('releases'), 'release'),
  ];
  const lines = [
    '# Sharded cluster stacks',
    '',
    'This directory is published by controller shards of [clusterstack-gitops](https://github.com/), one',
    "subdirectory each; every shard writes only its own. This index is rewritten by each shard's commit",
    'from the subdirectories on the branch: do not edit it by hand.',
    '',
    `${totals.join(', ')}.`,
    '',
    '| Shard | Clusters | Releases | Providers | Withheld | README |',
    '| --- | --- | --- | --- | --- | --- |',
    ...shards.map(([shard, summary]) =>
      summary.readable
        ? `| ${shard} | ${summary.clusters.length} | ${summary.releases.length} | ${summary.providers.length} | ${summary.withheld} | [${shard}/${treeDir}README.md](${shard}/${treeDir}README.md) |`
        : `| ${shard} | - | - | - | - | no readable ${PROVENANCE_FILE} |`,
    ),
  ];
  const twice = [...publishedTwice(shards, 'clusters'), ...publishedTwice(shards, 'releases')];
  if (twice.length > 0) {
    lines.push('', '## Published by more than one shard', '');
    lines.push('Handed over between shards: both publish the same output until the new shard has it.', '');
    lines.push(...twice.map((entry) => `- ${entry}`));
  }
  for (const [shard, summary] of shards) {
    lines.push('', `## ${shard}`, '', `Subtree: [\`${shard}/${treeDir}\`](${shard}/${treeDir})`);
    if (!summary.readable) {
      lines.push('', `No readable \`${PROVENANCE_FILE}\`: what it holds is unknown.`);
      continue;
    }
    lines.push('', `Releases (${summary.releases.length}):`, '');
    lines.push(...(summary.releases.length > 0 ? byNamespace(summary.releases) : ['- none']));
    lines.push('', `Clusters (${summary.clusters.length}):`, '');
    lines.push(...(summary.clusters.length > 0 ? byNamespace(summary.clusters) : ['- none']));
    if (summary.providers.length > 0)
      lines.push('', `Providers (${summary.providers.length}): ${summary.providers.join(', ')}`);
  }
  return `${lines.join('\n')}\n`;
}
