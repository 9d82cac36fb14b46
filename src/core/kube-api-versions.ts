// The API versions a render tells helm the target cluster serves (`helm template --api-versions`,
// what a chart reads through `.Capabilities.APIVersions.Has`): the built-in group/versions the
// target Kubernetes minor serves by default, the Cluster API group/versions and kinds, and the
// CustomResourceDefinitions the unit's release ships.
//
// Why: `--kube-version` sets only `.Capabilities.KubeVersion`. Helm's own API list is whatever its
// client-go knew when it was built (helm 3.10.1: Kubernetes 1.25's, without
// flowcontrol.apiserver.k8s.io/v1; helm 3.22 and 4.3: 1.37's), whatever the target. `--api-versions`
// ADDS to that list and cannot remove from it (helm 3 and 4 alike append), so a chart that tests
// for a newer version first now gets it where the target serves it, and an API the target no longer
// serves can still be chosen by a chart that tests for the old version first: servedApiProblem
// names such objects after the render.
//
// The built-in table: the GA and beta group/versions enabled by default, each with the first minor
// that serves it and the first that no longer does, from Kubernetes' "Deprecated API Migration
// Guide" (https://kubernetes.io/docs/reference/using-api/deprecation-guide/) for the removals and
// each API's graduation in the Kubernetes release notes for the additions. Alpha versions and betas
// that are off by default are left out: a cluster serves them only when switched on. Minors before
// the table's first are treated as its first, minors after its last as its last.

/** [group/version, first minor serving it, first minor no longer serving it (none: still served)]. */
const BUILT_IN: readonly (readonly [string, number, number?])[] = [
  ['v1', 16],
  ['admissionregistration.k8s.io/v1', 16],
  ['admissionregistration.k8s.io/v1beta1', 16, 22],
  ['apiextensions.k8s.io/v1', 16],
  ['apiextensions.k8s.io/v1beta1', 16, 22],
  ['apiregistration.k8s.io/v1', 16],
  ['apiregistration.k8s.io/v1beta1', 16, 22],
  ['apps/v1', 16],
  ['authentication.k8s.io/v1', 16],
  ['authentication.k8s.io/v1beta1', 16, 22],
  ['authorization.k8s.io/v1', 16],
  ['authorization.k8s.io/v1beta1', 16, 22],
  ['autoscaling/v1', 16],
  ['autoscaling/v2', 23],
  ['autoscaling/v2beta1', 16, 25],
  ['autoscaling/v2beta2', 16, 26],
  ['batch/v1', 16],
  ['batch/v1beta1', 16, 25],
  ['certificates.k8s.io/v1', 19],
  ['certificates.k8s.io/v1beta1', 16, 22],
  ['coordination.k8s.io/v1', 16],
  ['coordination.k8s.io/v1beta1', 16, 22],
  ['discovery.k8s.io/v1', 21],
  ['discovery.k8s.io/v1beta1', 17, 25],
  ['events.k8s.io/v1', 19],
  ['events.k8s.io/v1beta1', 16, 25],
  ['extensions/v1beta1', 16, 22],
  ['flowcontrol.apiserver.k8s.io/v1', 29],
  ['flowcontrol.apiserver.k8s.io/v1beta1', 20, 26],
  ['flowcontrol.apiserver.k8s.io/v1beta2', 23, 29],
  ['flowcontrol.apiserver.k8s.io/v1beta3', 26, 32],
  ['networking.k8s.io/v1', 16],
  ['networking.k8s.io/v1beta1', 16, 22],
  ['node.k8s.io/v1', 20],
  ['node.k8s.io/v1beta1', 16, 25],
  ['policy/v1', 21],
  ['policy/v1beta1', 16, 25],
  ['rbac.authorization.k8s.io/v1', 16],
  ['rbac.authorization.k8s.io/v1beta1', 16, 22],
  ['resource.k8s.io/v1', 34],
  ['scheduling.k8s.io/v1', 16],
  ['scheduling.k8s.io/v1beta1', 16, 22],
  ['storage.k8s.io/v1', 16],
  // CSIStorageCapacity stayed in v1beta1 until 1.27; the group's other kinds left it in 1.22.
  ['storage.k8s.io/v1beta1', 16, 27],
];

/** The minors the table describes; others are treated as the nearest of these. */
const API_TABLE_MINORS = { first: 16, last: 37 } as const;

/**
 * Cluster API's group/versions and the kinds of its core group, as the management cluster of a
 * Cluster API stack serves them (its CRDs); the `group/version/Kind` form is the one helm accepts
 * for a kind.
 */
const CLUSTER_API: readonly string[] = (() => {
  const groups = [
    'cluster.x-k8s.io',
    'bootstrap.cluster.x-k8s.io',
    'controlplane.cluster.x-k8s.io',
    'addons.cluster.x-k8s.io',
    'ipam.cluster.x-k8s.io',
    'runtime.cluster.x-k8s.io',
  ];
  const kinds = [
    'Cluster',
    'ClusterClass',
    'Machine',
    'MachineDeployment',
    'MachineHealthCheck',
    'MachinePool',
    'MachineSet',
  ];
  return ['v1beta1', 'v1beta2'].flatMap((version) => [
    ...groups.map((group) => `${group}/${version}`),
    ...kinds.map((kind) => `cluster.x-k8s.io/${version}/${kind}`),
  ]);
})();

/** A built-in group/version's `{ since, removed }` minors, or undefined when it is not built in. */
function builtIn(groupVersion: string): { since: number; removed?: number } | undefined {
  const row = BUILT_IN.find(([name]) => name === groupVersion);
  return row ? { since: row[1], ...(row[2] !== undefined ? { removed: row[2] } : {}) } : undefined;
}

/** The minor of `1.30.4` / `v1.30`; undefined for anything else. */
function minorOf(kubeVersion: string): number | undefined {
  const match = /^v?1\.(\d+)/.exec(kubeVersion.trim());
  return match ? Number(match[1]) : undefined;
}

function clampMinor(minor: number): number {
  return Math.min(API_TABLE_MINORS.last, Math.max(API_TABLE_MINORS.first, minor));
}

/** The built-in group/versions Kubernetes `kubeVersion` serves by default, sorted. */
function builtInApiVersions(kubeVersion: string): string[] {
  const parsed = minorOf(kubeVersion);
  if (parsed === undefined) return [];
  const minor = clampMinor(parsed);
  return BUILT_IN.filter(([, since, removed]) => since <= minor && (removed === undefined || minor < removed))
    .map(([name]) => name)
    .sort();
}

/** The group/versions and `group/version/Kind` forms of the CRDs given (served versions only). */
export function crdApiVersions(crds: readonly unknown[]): string[] {
  const found = new Set<string>();
  for (const crd of crds) {
    if (crd === null || typeof crd !== 'object') continue;
    const object = crd as {
      kind?: unknown;
      spec?: { group?: unknown; names?: { kind?: unknown }; versions?: unknown; version?: unknown };
    };
    if (object.kind !== 'CustomResourceDefinition' || typeof object.spec?.group !== 'string') continue;
    const group = object.spec.group;
    const kind = typeof object.spec.names?.kind === 'string' ? object.spec.names.kind : undefined;
    const versions = Array.isArray(object.spec.versions)
      ? (object.spec.versions as { name?: unknown; served?: unknown }[])
          .filter((version) => version?.served !== false && typeof version?.name === 'string')
          .map((version) => version.name as string)
      : typeof object.spec.version === 'string'
        ? [object.spec.version]
        : [];
    for (const version of versions) {
      found.add(`${group}/${version}`);
      if (kind) found.add(`${group}/${version}/${kind}`);
    }
  }
  return [...found].sort();
}

/**
 * What a unit renders against (`--api-versions`): the built-ins of `kubeVersion`, Cluster API and
 * the given CRD forms; sorted, without duplicates, so that it digests and renders the same every time.
 */
export function targetApiVersions(kubeVersion: string, crdForms: readonly string[] = []): string[] {
  return [...new Set([...builtInApiVersions(kubeVersion), ...CLUSTER_API, ...crdForms])].sort();
}

/**
 * Why Kubernetes `kubeVersion` cannot take an object of `apiVersion` (a built-in group/version it
 * does not serve, with the minors that do), or undefined when it can or the version is not built in.
 */
export function servedApiProblem(apiVersion: string, kubeVersion: string): string | undefined {
  const known = builtIn(apiVersion);
  const parsed = minorOf(kubeVersion);
  if (!known || parsed === undefined) return undefined;
  const minor = clampMinor(parsed);
  if (known.since <= minor && (known.removed === undefined || minor < known.removed)) return undefined;
  const served =
    known.removed === undefined
      ? `served from 1.${known.since}`
      : `served from 1.${known.since} until 1.${known.removed - 1}`;
  return `${apiVersion} is not served by Kubernetes 1.${parsed} (${served})`;
}
