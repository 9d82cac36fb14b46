// Which releases each ClusterStack keeps and why, and which release each Cluster uses. Pure: the
// callers have already listed releases and read the objects.
import {
  type CapiCluster,
  type ClusterStack,
  type ClusterStackReleaseSummary,
  type KubeObject,
  withSpecDefaults,
} from '../api/types.js';
import { clusterClassOf } from '../api/capi-cluster.js';
import { nearestName } from '../core/did-you-mean.js';
import type { Problem } from '../core/problem.js';
import {
  clusterClassName,
  formatReleaseTag,
  kubernetesMinorOf,
  parseClusterClassName,
  type ReleaseTag,
} from '../core/release-tag.js';
import {
  channelOf,
  compareStackVersions,
  formatDotVersion,
  isHashBuild,
  parseStackVersion,
  sameVersion,
} from '../core/stack-version.js';
import { compareText } from '../core/compare-text.js';

export interface AvailableRelease {
  tag: string;
  parsed: ReleaseTag;
  publishedAt?: string;
}

export interface StackInput {
  stack: ClusterStack;
  /** Every release the stack's source offers (other stacks' releases are ignored here). */
  releases: AvailableRelease[];
}

export interface ResolveInput {
  stacks: StackInput[];
  /**
   * ClusterStacks whose release source could not be listed: nothing is decided for them, and a
   * Cluster of theirs is told so (the source, not the Cluster, is at fault).
   */
  unlisted?: UnlistedStack[];
  clusters: CapiCluster[];
  /** <Provider>ClusterStackRelease objects: their `status.ready` gates releases of provider stacks. */
  providerReleases?: KubeObject[];
}

/** A ClusterStack whose source (its location) failed to list its releases; `retryable` when trying later may help. */
export interface UnlistedStack {
  stack: ClusterStack;
  source: string;
  retryable: boolean;
}

/** Why a release stays in the output; anything else is dropped (and pruned by the GitOps engine). */
type KeepReason =
  'listed in spec.versions' | 'newest release (autoSubscribe)' | 'newest ready release' | `used by Cluster ${string}`;

export interface ReleaseDecision {
  name: string;
  /** The ClusterClass the release's chart produces. */
  className: string;
  version: string;
  kept: boolean;
  reasons: string[];
  /** Provider work done (always true for noProvider stacks). */
  ready: boolean;
  readyMessage?: string;
  /** Clusters (`namespace/name`) whose class (topology.class or topology.classRef) names this release. */
  usedBy: string[];
}

export interface StackResolution {
  namespace: string;
  name: string;
  stack: ClusterStack;
  /** Releases matching the stack, oldest first; hash builds by publish time. */
  releases: ReleaseDecision[];
  latestRelease?: string;
  usableVersions: string;
  summary: ClusterStackReleaseSummary[];
  problems: Problem[];
  notes: string[];
  /**
   * Sharded controller (src/shards): another shard renders and publishes this stack's releases; this
   * one only renders the addons of its own Clusters that use them.
   */
  publishedByAnotherShard?: true;
}

export interface ClusterResolution {
  namespace: string;
  name: string;
  cluster: CapiCluster;
  /** False when the Cluster's class is not a cluster stack ClusterClass: not ours to render. */
  managed: boolean;
  className?: string;
  /** The field that names the class: `spec.topology.class` (v1beta1) or `spec.topology.classRef.name` (v1beta2). */
  classField?: string;
  release?: string;
  stack?: { namespace: string; name: string };
  problems: Problem[];
}

export interface Resolution {
  clusterStacks: StackResolution[];
  clusters: ClusterResolution[];
}

const DEFAULT_NAMESPACE = 'default';

export function namespaceOf(object: { metadata: { namespace?: string } }): string {
  return object.metadata.namespace ?? DEFAULT_NAMESPACE;
}

function objectKey(object: { metadata: { namespace?: string; name: string } }): string {
  return `${namespaceOf(object)}/${object.metadata.name}`;
}

/** Whether a release belongs to a stack: same provider, name, Kubernetes minor and channel. */
export function releaseMatchesStack(tag: ReleaseTag, stack: ClusterStack): boolean {
  const spec = withSpecDefaults(stack.spec);
  return (
    tag.provider === spec.provider &&
    tag.name === spec.name &&
    kubernetesMinorOf(tag) === spec.kubernetesVersion &&
    channelOf(tag.version) === spec.channel
  );
}

/**
 * Orders releases of one channel oldest first: by version; hash builds (no order of their own) by
 * publish time, then by tag so the order is at least stable.
 */
export function compareReleases(a: AvailableRelease, b: AvailableRelease): number {
  const byVersion = compareStackVersions(a.parsed.version, b.parsed.version);
  if (byVersion !== undefined && byVersion !== 0) return byVersion;
  if (byVersion === undefined) {
    const byTime = compareText(a.publishedAt ?? '', b.publishedAt ?? '');
    if (byTime !== 0) return byTime;
  }
  return compareText(a.tag, b.tag);
}

function providerReadiness(
  stack: ClusterStack,
  tag: string,
  providerReleases: KubeObject[],
): { ready: boolean; message?: string } {
  const spec = withSpecDefaults(stack.spec);
  if (spec.noProvider) return { ready: true };
  const kind = spec.providerRef?.kind?.replace(/Template$/, '') ?? '<Provider>ClusterStackRelease';
  const object = providerReleases.find(
    (candidate) =>
      candidate.metadata.name === tag && namespaceOf(candidate) === namespaceOf(stack) && candidate.kind === kind,
  );
  if (!object)
    return {
      ready: false,
      message: `waiting for ${kind} ${namespaceOf(stack)}/${tag}: the provider has not prepared this release yet`,
    };
  const status = (object as { status?: { ready?: unknown } }).status;
  if (status?.ready === true) return { ready: true };
  return {
    ready: false,
    message: `waiting for ${kind} ${namespaceOf(stack)}/${tag} to report status.ready: true (node images may still be building)`,
  };
}

function findStackForClass(tag: ReleaseTag, namespace: string, stacks: StackInput[]): StackInput | undefined {
  return stacks.find((input) => namespaceOf(input.stack) === namespace && releaseMatchesStack(tag, input.stack));
}

/** The ClusterClass names of the releases the stacks offer (each stack's own releases), in order. */
function offeredClasses(stacks: StackInput[]): string[] {
  return [
    ...new Set(
      stacks.flatMap((input) =>
        input.releases
          .filter((release) => releaseMatchesStack(release.parsed, input.stack))
          .map((release) => clusterClassName(release.parsed)),
      ),
    ),
  ];
}

/**
 * Why a class name that is no cluster stack class still looks meant as one (it starts with a
 * ClusterStack's `<provider>-<name>-`, or is a few edits from a class a stack offers), or
 * undefined for a ClusterClass that has nothing to do with the stacks (not ours to render).
 */
function meantAsStackClass(className: string, stacks: StackInput[]): string | undefined {
  const classes = offeredClasses(stacks);
  const near = nearestName(className, classes, CLASS_TYPO_EDITS);
  const stack = stacks.find((input) => className.startsWith(`${input.stack.spec.provider}-${input.stack.spec.name}-`));
  if (!near && !stack) return undefined;
  const suggestion =
    near ??
    nearestName(
      className,
      classes.filter((name) => !stack || name.startsWith(`${stack.stack.spec.provider}-${stack.stack.spec.name}-`)),
      Math.floor(className.length / 3),
    );
  const owner = stack ? ` of ClusterStack ${objectKey(stack.stack)}` : '';
  return `names ${className}, which is not a cluster stack class${owner} (expected <provider>-<name>-<k8s major>-<k8s minor>-<version>, e.g. ${suggestion ?? `${stack!.stack.spec.provider}-${stack!.stack.spec.name}-${stack!.stack.spec.kubernetesVersion.replace('.', '-')}-v1`})${suggestion ? `; did you mean ${suggestion}?` : ''}`;
}

/** How many edits from an offered class a name may be and still count as a typo of it. */
const CLASS_TYPO_EDITS = 3;

/** Which release the ClusterClass a Cluster names stands for (v1beta1 or v1beta2), or why that does not work. */
function resolveCluster(cluster: CapiCluster, stacks: StackInput[], unlisted: UnlistedStack[]): ClusterResolution {
  const base = { namespace: namespaceOf(cluster), name: cluster.metadata.name, cluster, problems: [] as Problem[] };
  const object = `Cluster ${objectKey(cluster)}`;
  const named = clusterClassOf(cluster);
  if (named.kind === 'none') return { ...base, managed: false };
  // A topology that names no class is no foreign Cluster: it is a broken one, and it may be ours.
  if (named.kind === 'invalid')
    return { ...base, managed: true, problems: [{ object, path: named.path, message: named.message }] };
  const className = named.name;
  const classPath = named.path;
  let tag: ReleaseTag;
  try {
    tag = parseClusterClassName(className);
  } catch {
    const meant = meantAsStackClass(className, stacks);
    if (meant)
      return {
        ...base,
        managed: true,
        className,
        classField: classPath,
        problems: [{ object, path: classPath, message: meant }],
      };
    return { ...base, managed: false, className, classField: classPath };
  }
  const release = formatReleaseTag(tag);
  const resolution: ClusterResolution = { ...base, managed: true, className, classField: classPath, release };
  const classNamespace = named.namespace;
  const versionProblem = topologyVersionProblem(cluster.spec?.topology?.version, className, tag);
  if (versionProblem) resolution.problems.push({ object, path: 'spec.topology.version', message: versionProblem });
  const stackInput = findStackForClass(tag, classNamespace, stacks);
  const unlistedStack = stackInput
    ? undefined
    : unlisted.find((entry) => findStackForClass(tag, classNamespace, [{ stack: entry.stack, releases: [] }]));
  if (unlistedStack) {
    resolution.problems.push({
      object,
      path: classPath,
      message: `names ${className}, of ClusterStack ${objectKey(unlistedStack.stack)}, whose release source ${unlistedStack.source} could not be listed (the ClusterStack's problem says why); nothing is decided for this Cluster until it can be${unlistedStack.retryable ? '; retry later' : ''}`,
      ...(unlistedStack.retryable ? { retryable: true } : {}),
    });
    return resolution;
  }
  if (!stackInput) {
    resolution.problems.push({
      object,
      path: classPath,
      message: `names ${className}, but no ClusterStack in namespace ${classNamespace} has provider ${tag.provider}, name ${tag.name}, Kubernetes ${kubernetesMinorOf(tag)} and channel ${channelOf(tag.version)}; create one or fix the class`,
    });
    return resolution;
  }
  resolution.stack = { namespace: namespaceOf(stackInput.stack), name: stackInput.stack.metadata.name };
  if (!stackInput.releases.some((candidate) => candidate.tag === release)) {
    const near = nearestName(className, offeredClasses([stackInput]), Math.floor(className.length / 3));
    resolution.problems.push({
      object,
      path: classPath,
      message: `names ${className}, but the release source has no release ${release}; pick a class of an existing release${near ? `; did you mean ${near}?` : ''}`,
    });
  }
  return resolution;
}

/**
 * What is wrong with `spec.topology.version` before the release is loaded: Cluster API takes only
 * a Kubernetes version with its `v` and patch (`v1.30.4`), and it must be of the class's minor.
 * The patch itself is checked against the release's metadata.yaml once it is loaded.
 */
function topologyVersionProblem(version: unknown, className: string, tag: ReleaseTag): string | undefined {
  if (version === undefined || version === null) return undefined;
  const match = typeof version === 'string' ? KUBE_SEMVER.exec(version) : null;
  if (!match)
    return `is ${JSON.stringify(version)}, not a Kubernetes version: Cluster API takes a version such as v${kubernetesMinorOf(tag)}.0 (with "v" and the patch), and the cluster-stack-operator the exact Kubernetes version of class ${className}'s release`;
  if (`${match[1]}.${match[2]}` !== kubernetesMinorOf(tag))
    return `is ${String(version)} but class ${className} is for Kubernetes ${kubernetesMinorOf(tag)}; use a class of the same minor version`;
  return undefined;
}

/** Cluster API's KubeSemver: a Kubernetes version with its leading "v" (util/version). */
const KUBE_SEMVER = /^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([-0-9a-zA-Z_.+]*)?$/;

/** Keeps each release spec.versions lists; a listed version the source lacks is a problem on its entry. */
function reasonsFromListedVersions(
  spec: ReturnType<typeof withSpecDefaults>,
  matching: readonly AvailableRelease[],
  object: string,
  addReason: (tag: string, reason: KeepReason) => void,
  problems: Problem[],
): void {
  spec.versions.forEach((version, index) => {
    let parsed;
    try {
      parsed = parseStackVersion(version);
    } catch {
      return; // the validator reports it
    }
    const release = matching.find((candidate) => sameVersion(candidate.parsed.version, parsed));
    if (release) addReason(release.tag, 'listed in spec.versions');
    else {
      const [major, minor] = spec.kubernetesVersion.split('.').map(Number);
      const expected = formatReleaseTag({
        provider: spec.provider,
        name: spec.name,
        kubernetesMajor: major ?? 0,
        kubernetesMinor: minor ?? 0,
        version: parsed,
      });
      problems.push({
        object,
        path: `spec.versions[${index}]`,
        message: `${version} is not in the release source (no release ${expected}); remove it or publish that release`,
      });
    }
  });
}

/** Each matching release with whether it is kept and why, its readiness and the Clusters using it. */
function releaseDecisions(
  matching: readonly AvailableRelease[],
  reasons: ReadonlyMap<string, string[]>,
  readiness: ReadonlyMap<string, { ready: boolean; message?: string }>,
  usedBy: ReadonlyMap<string, string[]>,
): ReleaseDecision[] {
  return matching.map((release) => {
    const why = reasons.get(release.tag) ?? [];
    const ready = readiness.get(release.tag) ?? { ready: false };
    const decision: ReleaseDecision = {
      name: release.tag,
      className: clusterClassName(release.parsed),
      version: formatDotVersion(release.parsed.version),
      kept: why.length > 0,
      reasons:
        why.length > 0 ? why : ['not listed in spec.versions, not the newest (ready) release, and no Cluster uses it'],
      ready: ready.ready,
      usedBy: usedBy.get(release.tag) ?? [],
    };
    if (ready.message) decision.readyMessage = ready.message;
    return decision;
  });
}

/** The status summary of the kept releases. */
function releaseSummary(releases: readonly ReleaseDecision[]): ClusterStackReleaseSummary[] {
  return releases
    .filter((release) => release.kept)
    .map((release) => {
      const entry: ClusterStackReleaseSummary = {
        name: release.name,
        ready: release.ready,
        phase: release.ready ? 'done' : 'provider-specific work',
      };
      if (release.readyMessage) entry.message = release.readyMessage;
      return entry;
    });
}

function resolveStack(
  input: StackInput,
  clusters: ClusterResolution[],
  providerReleases: KubeObject[],
): StackResolution {
  const { stack } = input;
  const spec = withSpecDefaults(stack.spec);
  const namespace = namespaceOf(stack);
  const problems: Problem[] = [];
  const notes: string[] = [];
  const object = `ClusterStack ${objectKey(stack)}`;
  const matching = input.releases.filter((release) => releaseMatchesStack(release.parsed, stack)).sort(compareReleases);
  if (matching.some((release) => isHashBuild(release.parsed.version)) && matching.length > 1) {
    notes.push(
      matching.every((release) => release.publishedAt)
        ? 'hash builds carry no version order; "newest" means most recently published'
        : 'hash builds carry no version order and the source gives no publish times; "newest" is the last by tag name, so list the wanted versions in spec.versions',
    );
  }

  const reasons = new Map<string, string[]>(matching.map((release) => [release.tag, []]));
  const addReason = (tag: string, reason: KeepReason): void => {
    reasons.get(tag)?.push(reason);
  };

  reasonsFromListedVersions(spec, matching, object, addReason, problems);

  const readiness = new Map(
    matching.map((release) => [release.tag, providerReadiness(stack, release.tag, providerReleases)]),
  );
  const newest = matching.at(-1);
  if (spec.autoSubscribe && newest) addReason(newest.tag, 'newest release (autoSubscribe)');
  // With autoSubscribe, the newest ready release stays too, so a failing newer one never removes
  // the working one. Without it, spec.versions already names everything the user wants.
  const newestReady = [...matching].reverse().find((release) => readiness.get(release.tag)?.ready);
  if (spec.autoSubscribe && newestReady) addReason(newestReady.tag, 'newest ready release');

  const usedBy = new Map<string, string[]>();
  for (const cluster of clusters) {
    if (
      !cluster.release ||
      !cluster.stack ||
      cluster.stack.namespace !== namespace ||
      cluster.stack.name !== stack.metadata.name
    )
      continue;
    const key = `${cluster.namespace}/${cluster.name}`;
    usedBy.set(cluster.release, [...(usedBy.get(cluster.release) ?? []), key]);
    addReason(cluster.release, `used by Cluster ${key}`);
  }

  if (matching.length === 0) {
    problems.push({
      object,
      message: `the release source has no release for provider ${spec.provider}, name ${spec.name}, Kubernetes ${spec.kubernetesVersion}, channel ${spec.channel}`,
    });
  } else if (!spec.autoSubscribe && spec.versions.length === 0 && usedBy.size === 0) {
    notes.push('autoSubscribe is false and spec.versions is empty: no release is kept');
  }

  const releases = releaseDecisions(matching, reasons, readiness, usedBy);

  const keptReady = releases.filter((release) => release.kept && release.ready);
  const summary = releaseSummary(releases);
  const resolution: StackResolution = {
    namespace,
    name: stack.metadata.name,
    stack,
    releases,
    usableVersions: keptReady.map((release) => release.version).join(', '),
    summary,
    problems,
    notes,
  };
  const latest = keptReady.at(-1);
  if (latest) resolution.latestRelease = latest.name;
  return resolution;
}

/** Resolves every ClusterStack and Cluster. A problem with one never hides the results for the others. */
export function resolveReleases(input: ResolveInput): Resolution {
  const clusters = [...input.clusters]
    .sort((a, b) => compareText(objectKey(a), objectKey(b)))
    .map((cluster) => resolveCluster(cluster, input.stacks, input.unlisted ?? []));
  const clusterStacks = [...input.stacks]
    .sort((a, b) => compareText(objectKey(a.stack), objectKey(b.stack)))
    .map((stackInput) => resolveStack(stackInput, clusters, input.providerReleases ?? []));
  for (const cluster of clusters) {
    if (!cluster.release || !cluster.stack) continue;
    const stack = clusterStacks.find(
      (candidate) => candidate.namespace === cluster.stack?.namespace && candidate.name === cluster.stack?.name,
    );
    const decision = stack?.releases.find((release) => release.name === cluster.release);
    if (decision && !decision.ready) {
      cluster.problems.push({
        object: `Cluster ${cluster.namespace}/${cluster.name}`,
        path: cluster.classField,
        message: `names ${cluster.className}, whose release is not ready: ${decision.readyMessage ?? 'provider work pending'}`,
      });
    }
  }
  return { clusterStacks, clusters };
}
