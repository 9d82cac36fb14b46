// Release tags (`docker-ferrol-1-27-v3`, `openstack-scs-1-32-v0-sha-abc1234`) and the ClusterClass
// names derived from them (`docker-ferrol-1-27-v3`, `openstack-scs-1-32-v0-sha.abc1234`).
import {
  formatDashVersion,
  formatDotVersion,
  parseDashVersion,
  type StackVersion,
  VersionSyntaxError,
} from './stack-version.js';
import { Failure } from './failure.js';

export interface ReleaseTag {
  provider: string;
  name: string;
  kubernetesMajor: number;
  kubernetesMinor: number;
  version: StackVersion;
}

export class TagSyntaxError extends Failure {
  constructor(
    readonly input: string,
    reason: string,
  ) {
    super('fix-input', `"${input}" is not a cluster stack release tag: ${reason}`);
    this.name = 'TagSyntaxError';
  }
}

const SEGMENT = /^[a-z0-9]+$/;
const NUMBER = /^(0|[1-9]\d*)$/;
const TAG_SHAPE = 'expected <provider>-<name>-<k8s major>-<k8s minor>-<version>, e.g. docker-ferrol-1-27-v3';

/** Parses a release tag (dash form); throws TagSyntaxError naming what is wrong. */
export function parseReleaseTag(input: string): ReleaseTag {
  const parts = input.split('-');
  if (parts.length !== 5 && parts.length !== 7) throw new TagSyntaxError(input, TAG_SHAPE);
  const [provider, name, major, minor, ...versionParts] = parts as [string, string, string, string, ...string[]];
  if (!SEGMENT.test(provider) || !SEGMENT.test(name)) {
    throw new TagSyntaxError(input, 'provider and name must be lowercase letters and digits');
  }
  if (!NUMBER.test(major) || !NUMBER.test(minor)) {
    throw new TagSyntaxError(input, `"${major}-${minor}" is not a Kubernetes major-minor; ${TAG_SHAPE}`);
  }
  let version: StackVersion;
  try {
    version = parseDashVersion(versionParts.join('-'));
  } catch (error) {
    if (error instanceof VersionSyntaxError) throw new TagSyntaxError(input, error.message);
    throw error;
  }
  return { provider, name, kubernetesMajor: Number(major), kubernetesMinor: Number(minor), version };
}

/** Like parseReleaseTag, but returns undefined instead of throwing. */
export function tryParseReleaseTag(input: string): ReleaseTag | undefined {
  try {
    return parseReleaseTag(input);
  } catch {
    return undefined;
  }
}

/** `<provider>-<name>-<maj>-<min>`: the Helm release name of the cluster-class chart and chart name prefix. */
export function stackPrefix(
  tag: Pick<ReleaseTag, 'provider' | 'name' | 'kubernetesMajor' | 'kubernetesMinor'>,
): string {
  return `${tag.provider}-${tag.name}-${tag.kubernetesMajor}-${tag.kubernetesMinor}`;
}

export function formatReleaseTag(tag: ReleaseTag): string {
  return `${stackPrefix(tag)}-${formatDashVersion(tag.version)}`;
}

/** The ClusterClass name a release's cluster-class chart produces: the version in dot form. */
export function clusterClassName(tag: ReleaseTag): string {
  return `${stackPrefix(tag)}-${formatDotVersion(tag.version)}`;
}

/**
 * Parses a ClusterClass name (`docker-ferrol-1-27-v1-alpha.5`) back into its release tag. Only the
 * exact name a release's chart gives its class is one: `docker-ferrol-1.27-v3` is refused.
 */
export function parseClusterClassName(className: string): ReleaseTag {
  const dots = className.split('.').length - 1;
  if (dots > 1) throw new TagSyntaxError(className, 'a cluster stack ClusterClass name has at most one "."');
  const tag = parseReleaseTag(className.replace('.', '-'));
  if (clusterClassName(tag) !== className)
    throw new TagSyntaxError(
      className,
      `the ClusterClass of release ${formatReleaseTag(tag)} is ${clusterClassName(tag)}`,
    );
  return tag;
}

/** The release tag a ClusterClass name stands for, or undefined when it is no cluster stack class. */
export function releaseOfClusterClass(className: string): string | undefined {
  try {
    return formatReleaseTag(parseClusterClassName(className));
  } catch {
    return undefined;
  }
}

export function kubernetesMinorOf(tag: ReleaseTag): string {
  return `${tag.kubernetesMajor}.${tag.kubernetesMinor}`;
}

/** Chart file names inside a release, as published stacks name them. */
export function clusterClassChartName(tag: ReleaseTag): string {
  return `${stackPrefix(tag)}-cluster-class`;
}

export function clusterAddonChartName(tag: ReleaseTag): string {
  return `${stackPrefix(tag)}-cluster-addon`;
}
