// Versions of addon layers and the Kubernetes version gate, compared as numbers with the `v`
// optional. Kraan's own gate treats "1.16" as invalid semver and lets everything pass; here a
// gate "1.16" means ">= 1.16.0", and a layer version "1.2" equals "1.2.0" and "v1.2.0".
import { semver } from './semver-functions.js';

// Up to three dot-separated numbers (leading zeros allowed: Kraan's examples use "0.1.01"), then
// an optional pre-release and build part as in semver.
const VERSION =
  /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

/** A version as a full semver string (`1.16` -> `1.16.0`, `v1.30.2-rc.1` -> `1.30.2-rc.1`), or undefined when it does not parse. */
export function normalizeVersion(text: string): string | undefined {
  const match = VERSION.exec(text.trim());
  if (!match) return undefined;
  const [major, minor, patch] = [match[1], match[2], match[3]].map((part) => String(Number.parseInt(part ?? '0', 10)));
  // Pre-release identifiers with leading zeros are invalid in semver; such a version is refused.
  const full = `${major}.${minor}.${patch}${match[4] ?? ''}`;
  return semver.valid(full) ?? undefined;
}

/** Whether two layer versions name the same version (numerically, `v` optional, missing parts zero). */
export function sameVersion(a: string, b: string): boolean {
  const left = normalizeVersion(a);
  const right = normalizeVersion(b);
  return left !== undefined && right !== undefined && semver.eq(left, right);
}

/** Whether a Cluster's Kubernetes version meets a gate (`>=`); undefined when either does not parse. */
export function meetsKubernetesGate(clusterVersion: string, gate: string): boolean | undefined {
  const cluster = normalizeVersion(clusterVersion);
  const minimum = normalizeVersion(gate);
  if (cluster === undefined || minimum === undefined) return undefined;
  // A pre-release of the gate's version (1.30.0-rc.1 for a gate 1.30) is not yet that version.
  return semver.gte(cluster, minimum);
}

/** How a layer at a version is named in messages: `base@1.2.0`, or `base` when it has no version (Kraan's samples omit it). */
export function layerRef(layer: string, version: string | undefined): string {
  return version ? `${layer}@${version}` : layer;
}
