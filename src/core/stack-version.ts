// Cluster stack versions: `v3` (stable), `v1-alpha.5` (pre-release channel), `v0-sha.hipstsw`
// (hash build, custom channel). Dot form is used in specs, metadata and ClusterClass names; dash
// form (`v1-alpha-5`) in release tags and object names.
import { Failure } from './failure.js';

const STABLE_CHANNEL = 'stable';
const CUSTOM_CHANNEL = 'custom';
/** The pre-release label hash builds carry; such versions belong to the `custom` channel. */
const HASH_LABEL = 'sha';

export interface StackVersion {
  major: number;
  /** Pre-release label (`alpha`, `sha`, ...); absent for stable versions. */
  label?: string;
  /** Pre-release patch: an integer for ordered channels, a hash for hash builds. */
  patch?: string;
}

export class VersionSyntaxError extends Failure {
  constructor(
    readonly input: string,
    reason: string,
  ) {
    super('fix-input', `"${input}" is not a cluster stack version: ${reason}`);
    this.name = 'VersionSyntaxError';
  }
}

const DOT_FORM = /^v(0|[1-9]\d*)(?:-([a-z][a-z0-9]*)\.([a-z0-9]+))?$/;
const DASH_FORM = /^v(0|[1-9]\d*)(?:-([a-z][a-z0-9]*)-([a-z0-9]+))?$/;
const EXPECTED = 'expected v<major> (e.g. v3) or v<major>-<channel>.<patch> (e.g. v1-alpha.5, v0-sha.abc1234)';

function fromMatch(match: RegExpExecArray): StackVersion {
  const version: StackVersion = { major: Number(match[1]) };
  if (match[2] !== undefined) {
    version.label = match[2];
    version.patch = match[3];
  }
  return version;
}

/** Parses the dot form (`v1-alpha.5`); throws VersionSyntaxError with the expected shape. */
export function parseStackVersion(input: string): StackVersion {
  const match = DOT_FORM.exec(input);
  if (match) return fromMatch(match);
  if (DASH_FORM.test(input) && input.includes('-')) {
    throw new VersionSyntaxError(input, `this is the dash form used in release tags; write ${toDotForm(input)} here`);
  }
  throw new VersionSyntaxError(input, EXPECTED);
}

/** Parses the dash form used in tags (`v1-alpha-5`). */
export function parseDashVersion(input: string): StackVersion {
  const match = DASH_FORM.exec(input);
  if (match) return fromMatch(match);
  throw new VersionSyntaxError(input, 'expected v<major> or v<major>-<channel>-<patch> in a release tag');
}

/** Parses either form; for inputs such as metadata.yaml that are lenient in practice. */
export function parseAnyVersion(input: string): StackVersion {
  const match = DOT_FORM.exec(input) ?? DASH_FORM.exec(input);
  if (match) return fromMatch(match);
  throw new VersionSyntaxError(input, EXPECTED);
}

function toDotForm(dash: string): string {
  const match = DASH_FORM.exec(dash);
  return match ? formatDotVersion(fromMatch(match)) : dash;
}

export function formatDotVersion(version: StackVersion): string {
  return version.label === undefined ? `v${version.major}` : `v${version.major}-${version.label}.${version.patch}`;
}

export function formatDashVersion(version: StackVersion): string {
  return version.label === undefined ? `v${version.major}` : `v${version.major}-${version.label}-${version.patch}`;
}

/** The ClusterStack channel a version belongs to: stable, custom (hash builds) or its label. */
export function channelOf(version: StackVersion): string {
  if (version.label === undefined) return STABLE_CHANNEL;
  if (isHashBuild(version)) return CUSTOM_CHANNEL;
  return version.label;
}

/** True for a hash build (`v0-sha.abc1234`): no version order, channel `custom`. */
export function isHashBuild(version: StackVersion): boolean {
  return version.label === HASH_LABEL;
}

const INTEGER = /^\d+$/;

/**
 * Orders two versions of the same channel: negative, zero or positive. Returns undefined when the
 * versions are not comparable: different channels, or two different hash builds (hashes carry no
 * order; callers fall back to publish time).
 */
export function compareStackVersions(a: StackVersion, b: StackVersion): number | undefined {
  if (channelOf(a) !== channelOf(b)) return undefined;
  if (a.major !== b.major) return a.major - b.major;
  if (a.patch === b.patch) return 0;
  if (a.patch !== undefined && b.patch !== undefined && INTEGER.test(a.patch) && INTEGER.test(b.patch)) {
    return Number(a.patch) - Number(b.patch);
  }
  return undefined;
}

export function sameVersion(a: StackVersion, b: StackVersion): boolean {
  return a.major === b.major && a.label === b.label && a.patch === b.patch;
}
