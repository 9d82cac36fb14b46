// A ClusterStack that cannot be resolved now must not vanish from the output: the GitOps engine
// would prune its ClusterClasses. When its source is down, the source serves the releases the
// target holds (see SourceListings); when its spec is invalid and no earlier valid spec is known
// (after a restart), it is rendered as a stand-in that keeps exactly its published releases, from
// a source whose downloads always fail, so render withholds them and keeps their published files.
// Everything else renders and publishes as usual.
import type { ClusterStack, ClusterStackRelease } from '../../api/types.js';
import type { Problem } from '../../core/problem.js';
import { tryParseReleaseTag } from '../../core/release-tag.js';
import { namespaceOf, releaseMatchesStack } from '../../release/resolve-releases.js';
import { formatDotVersion } from '../../core/stack-version.js';
import type { PublishedState } from '../../output/published-state.js';
import { listingFromTags, ReleaseSourceError, type ReleaseSource } from '../../release/release-source.js';

/** The source location of stand-in stacks: `clusterstack-withheld:<namespace>/<name>`. */
export const WITHHELD_SOURCE_PREFIX = 'clusterstack-withheld:';
const IDENTITY_PATHS = ['spec.provider', 'spec.name', 'spec.kubernetesVersion', 'spec.channel'];

/** The release tags whose ClusterClass side the target holds (from its provenance record). */
function publishedReleaseTags(published: PublishedState): string[] {
  const tags = new Set<string>();
  for (const unit of published.units.values()) if (unit.kind === 'release') tags.add(unit.release);
  return [...tags].sort();
}

/** The tags a source that cannot be listed falls back on: the published releases and the ClusterStackReleases that exist. */
export function fallbackReleaseTags(previous: PublishedState | undefined, releases: ClusterStackRelease[]): string[] {
  return [
    ...new Set([
      ...(previous ? publishedReleaseTags(previous) : []),
      ...releases.map((release) => release.metadata.name),
    ]),
  ].sort();
}

/**
 * A stand-in for an invalid ClusterStack: its identity (provider, name, Kubernetes version and
 * channel, which are immutable) with exactly the versions of `tags` that belong to it, read from
 * a source that only withholds. Undefined when the identity itself is invalid or nothing of it
 * was published.
 */
export function standInStack(stack: ClusterStack, problems: Problem[], tags: string[]): ClusterStack | undefined {
  if (problems.some((problem) => IDENTITY_PATHS.includes(problem.path ?? ''))) return undefined;
  const spec = stack.spec as Partial<ClusterStack['spec']> | undefined;
  if (typeof spec?.provider !== 'string' || typeof spec.name !== 'string' || typeof spec.kubernetesVersion !== 'string')
    return undefined;
  const identity: ClusterStack = {
    apiVersion: stack.apiVersion,
    kind: stack.kind,
    metadata: { name: stack.metadata.name, namespace: namespaceOf(stack) },
    spec: {
      provider: spec.provider,
      name: spec.name,
      kubernetesVersion: spec.kubernetesVersion,
      ...(typeof spec.channel === 'string' ? { channel: spec.channel } : {}),
    },
  };
  const versions = tags
    .map(tryParseReleaseTag)
    .filter((tag): tag is NonNullable<typeof tag> => tag !== undefined && releaseMatchesStack(tag, identity))
    .map((tag) => formatDotVersion(tag.version));
  if (versions.length === 0) return undefined;
  identity.spec = {
    ...identity.spec,
    versions: [...new Set(versions)],
    autoSubscribe: false,
    noProvider: true,
    releaseSource: `${WITHHELD_SOURCE_PREFIX}${namespaceOf(stack)}/${stack.metadata.name}`,
  };
  return identity;
}

/** The source of a stand-in: it lists `tags` and refuses every download with `why`. */
export function withheldSource(location: string, tags: string[], why: string): ReleaseSource {
  return {
    location,
    list: async () => listingFromTags(tags.map((tag) => ({ tag }))),
    fetch: async () => {
      throw new ReleaseSourceError('invalid-release', why);
    },
  };
}
