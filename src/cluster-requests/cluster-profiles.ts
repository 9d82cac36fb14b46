// One openMCP ClusterProfile (clusters.openmcp.cloud/v1alpha1, cluster-scoped) per ClusterStack:
// the Kubernetes versions its kept, ready releases offer, and which release a new Cluster for the
// profile gets. Pure: reads the resolution and the loaded releases' metadata.
import { semver } from '../core/semver-functions.js';
import type { KubeObject } from '../api/types.js';
import type { Resolution, StackResolution } from '../release/resolve-releases.js';
import { compareText } from '../core/compare-text.js';

export const OPENMCP_CLUSTERS_API = 'clusters.openmcp.cloud/v1alpha1';
/** Why a release is kept when a Cluster (and nothing else) keeps it. */
const USED_BY_PREFIX = 'used by Cluster ';

export interface ProfileRelease {
  /** Release tag, ClusterClass name and its Kubernetes version (from metadata.yaml, e.g. `1.30.2`). */
  release: string;
  className: string;
  kubernetesVersion: string;
  /** The Cluster API version of its ClusterClass (`cluster.x-k8s.io/v1beta2`); Clusters made for it are written in it. Absent: v1beta1. */
  clusterApiVersion?: string;
  /** Kept only because Clusters still use it. */
  deprecated: boolean;
}

export interface ClusterProfileInfo {
  name: string;
  stack: { namespace: string; name: string; provider: string };
  /** Kept, ready releases with their metadata, oldest first. */
  releases: ProfileRelease[];
  /** What a new Cluster for this profile uses: the newest non-deprecated release, else the newest. */
  newClusterRelease?: ProfileRelease;
}

/**
 * The profile name of a stack: `<namespace>.<provider>.<name>-<major>-<minor>`, plus `-<channel>`
 * for a channel other than stable. Dots cannot occur in its parts, so names never collide.
 */
function profileNameOf(stack: StackResolution): string {
  const spec = stack.stack.spec;
  const channel = spec.channel && spec.channel !== 'stable' ? `-${spec.channel}` : '';
  return `${stack.namespace}.${spec.provider}.${spec.name}-${spec.kubernetesVersion.replace('.', '-')}${channel}`;
}

/** What a loaded release says about itself: its metadata.yaml's Kubernetes version and its ClusterClass's apiVersion. */
export interface LoadedReleaseFacts {
  kubernetesVersion: string;
  clusterApiVersion?: string;
}

/** Every ClusterStack's profile, sorted by name; `factsOf` reads a loaded release (undefined: not loaded). */
export function clusterProfiles(
  resolution: Resolution,
  factsOf: (namespace: string, release: string) => LoadedReleaseFacts | undefined,
): ClusterProfileInfo[] {
  return resolution.clusterStacks
    .map((stack) => {
      const releases: ProfileRelease[] = [];
      for (const decision of stack.releases) {
        const facts = factsOf(stack.namespace, decision.name);
        if (!decision.kept || !decision.ready || !facts?.kubernetesVersion) continue;
        releases.push({
          release: decision.name,
          className: decision.className,
          kubernetesVersion: facts.kubernetesVersion,
          ...(facts.clusterApiVersion ? { clusterApiVersion: facts.clusterApiVersion } : {}),
          deprecated: decision.reasons.every((reason) => reason.startsWith(USED_BY_PREFIX)),
        });
      }
      const info: ClusterProfileInfo = {
        name: profileNameOf(stack),
        stack: { namespace: stack.namespace, name: stack.name, provider: stack.stack.spec.provider },
        releases,
      };
      const chosen = releases.filter((release) => !release.deprecated).at(-1) ?? releases.at(-1);
      if (chosen) info.newClusterRelease = chosen;
      return info;
    })
    .sort((a, b) => compareText(a.name, b.name));
}

/** `1.30.2` (a leading `v` dropped): openMCP lists plain versions. */
function plainVersion(version: string): string {
  return version.replace(/^v/, '');
}

/**
 * The ClusterProfile object. providerRef names the infrastructure provider, providerConfigRef the
 * ClusterStack (a namespaced object: its namespace is the first part of the profile name).
 * A version is deprecated when every release offering it is kept only because Clusters use it.
 */
export function clusterProfileObject(profile: ClusterProfileInfo): KubeObject {
  const versions = new Map<string, boolean>();
  for (const release of profile.releases) {
    const version = plainVersion(release.kubernetesVersion);
    versions.set(version, (versions.get(version) ?? true) && release.deprecated);
  }
  const supportedVersions = [...versions]
    .sort(([a], [b]) => compareVersions(a, b))
    .map(([version, deprecated]) => (deprecated ? { version, deprecated: true } : { version }));
  return {
    apiVersion: OPENMCP_CLUSTERS_API,
    kind: 'ClusterProfile',
    metadata: { name: profile.name },
    spec: {
      providerRef: { name: profile.stack.provider },
      providerConfigRef: { name: profile.stack.name },
      supportedVersions,
    },
  };
}

function compareVersions(a: string, b: string): number {
  const pa = semver.coerce(a);
  const pb = semver.coerce(b);
  const bySemver = pa && pb ? semver.compare(pa, pb) : 0;
  return bySemver !== 0 ? bySemver : compareText(a, b);
}
