// Observe and decide for Cluster API providers: which version each provider object renders (its
// spec.version, or the newest its source offers), its release fetched and its contract read from
// metadata.yaml; plus the guards that need nothing but the inputs (exactly one CoreProvider, kind
// and name unique, the configuration objects a spec names present). Guards that need the
// previously published tree (version lock, downgrade, contract after locking, removal in use) run
// in guard-providers.ts.
import { semver } from '../core/semver-functions.js';
import {
  CERT_MANAGER_DEFAULT_URL,
  CERT_MANAGER_URL_ANNOTATION,
  CERT_MANAGER_VERSION_ANNOTATION,
  type CapiProvider,
  describeProvider,
} from '../api/provider-types.js';
import type { KubeObject } from '../api/types.js';
import type { Problem } from '../core/problem.js';
import type { SourcedObject } from '../inputs/parse-manifests.js';
import { CERT_MANAGER_DIR, providerDir } from '../output/tree-layout.js';
import {
  type CertManagerRelease,
  fetchProblem,
  type ProviderFetcher,
  type ProviderRelease,
} from './provider-fetcher.js';
import { contractOf, parseReleaseSeries } from './provider-metadata.js';
import { compareText } from '../core/compare-text.js';

export interface PlannedProvider {
  provider: CapiProvider;
  /** The input file (and line) it came from. */
  origin: string;
  /** `management/providers/<kind>-<name>`. */
  dir: string;
  /** The version rendered; empty when none could be decided. */
  version: string;
  /** True when spec.version names it; false when it is the newest (and so subject to the lock). */
  pinned: boolean;
  release?: ProviderRelease;
  contract?: string;
  /** Variables for substitution (from spec.configSecret), by name; never printed. */
  variables: Map<string, string>;
  /** The documents of spec.additionalManifests (a ConfigMap's `manifests`), when named. */
  additionalManifests?: string;
  problems: Problem[];
}

/** cert-manager, declared on the CoreProvider (annotations), rendered before every provider. */
export interface PlannedCertManager {
  /** The CoreProvider declaring it. */
  core: CapiProvider;
  origin: string;
  /** `management/providers/cert-manager`. */
  dir: string;
  /** As declared (clusterctl's `cert-manager.url`, default its own), and the version resolved. */
  url: string;
  version: string;
  release?: CertManagerRelease;
  problems: Problem[];
}

export interface ProviderPlan {
  providers: PlannedProvider[];
  /** cert-manager, when the CoreProvider declares it. */
  certManager?: PlannedCertManager;
  /** Problems that concern several providers (no CoreProvider, two of a kind and name). */
  problems: Problem[];
  /** Fetches another version (the locked one) when the pipeline knows the previous tree. */
  fetcher: ProviderFetcher;
  /** All input objects (ConfigMaps for selectors). */
  inputs: KubeObject[];
}

function findInput(inputs: KubeObject[], kinds: string[], name: string, namespace: string): KubeObject | undefined {
  return inputs.find(
    (object) =>
      object.apiVersion === 'v1' &&
      kinds.includes(object.kind) &&
      object.metadata.name === name &&
      (object.metadata.namespace ?? 'default') === namespace,
  );
}

/** The key-value pairs of a Secret (data base64, stringData) or ConfigMap (data). */
function keyValues(object: KubeObject): Map<string, string> {
  const values = new Map<string, string>();
  const body = object as KubeObject & { data?: Record<string, unknown>; stringData?: Record<string, unknown> };
  for (const [key, value] of Object.entries(body.data ?? {})) {
    if (typeof value !== 'string') continue;
    values.set(key, object.kind === 'Secret' ? Buffer.from(value, 'base64').toString('utf8') : value);
  }
  if (object.kind === 'Secret')
    for (const [key, value] of Object.entries(body.stringData ?? {}))
      if (typeof value === 'string') values.set(key, value);
  return values;
}

/** The contract of a fetched release's version, or the problem why it has none. */
export function readContract(planned: PlannedProvider): void {
  if (!planned.release) return;
  try {
    planned.contract = contractOf(
      parseReleaseSeries(planned.release.metadata, `${planned.release.source} ${planned.version} metadata.yaml`),
      planned.version,
      `${planned.release.source} ${planned.version} metadata.yaml`,
    );
  } catch (error) {
    planned.problems.push({ object: describeProvider(planned.provider), message: (error as Error).message });
  }
}

/** The newest version: releases before pre-releases, as clusterctl's "latest". */
function newestVersion(versions: string[]): string | undefined {
  const releases = versions.filter((version) => semver.prerelease(version) === null);
  return (releases.length > 0 ? releases : versions).at(-1);
}

/** The key of a problem reading what a provider's field names (the controller's reads): the provider and the field path. */
export function providerInputKey(
  provider: KubeObject,
  path: 'spec.configSecret' | 'spec.additionalManifests' | 'spec.fetchConfig.selector' | string,
): string {
  return `${describeProvider(provider)}\n${path}`;
}

/**
 * Plans every provider: version, release, contract, configuration; problems are per provider or
 * shared. `unreadable` holds why an object a field names could not be read (the controller reads
 * them from the API server), in place of "not among the inputs".
 */
export async function planProviders(
  providers: SourcedObject<CapiProvider>[],
  inputs: KubeObject[],
  fetcher: ProviderFetcher,
  unreadable?: ReadonlyMap<string, Problem>,
): Promise<ProviderPlan> {
  const plan: ProviderPlan = { providers: [], problems: [], fetcher, inputs };
  if (providers.length === 0) return plan;
  const cores = providers.filter((sourced) => sourced.object.kind === 'CoreProvider');
  if (cores.length !== 1) {
    plan.problems.push({
      message:
        cores.length === 0
          ? `the inputs hold ${providers.length} Cluster API provider object(s) but no CoreProvider; add exactly one (cluster-api) so the others have a core and a contract to match`
          : `the inputs hold ${cores.length} CoreProviders (${cores.map((core) => `${describeProvider(core.object)} at ${core.source}`).join(', ')}); a management cluster has exactly one`,
    });
  }
  const byDir = new Map<string, SourcedObject<CapiProvider>>();
  for (const sourced of providers) {
    const dir = providerDir(sourced.object.kind, sourced.object.metadata.name);
    const first = byDir.get(dir);
    if (first) {
      plan.problems.push({
        source: sourced.source,
        object: describeProvider(sourced.object),
        message: `has the same kind and name as ${describeProvider(first.object)} at ${first.source}; a provider kind and name may appear once (clusterctl installs one instance per provider)`,
      });
      continue;
    }
    byDir.set(dir, sourced);
  }

  await Promise.all(
    [...byDir].map(async ([dir, { object: provider, source: origin }]) => {
      const planned: PlannedProvider = {
        provider,
        origin,
        dir,
        version: provider.spec?.version ?? '',
        pinned: provider.spec?.version !== undefined,
        variables: new Map(),
        problems: [],
      };
      plan.providers.push(planned);
      await planProvider(planned, inputs, fetcher, unreadable);
    }),
  );
  plan.providers.sort((a, b) => compareText(a.dir, b.dir));
  if (cores.length === 1) {
    const certManager = await planCertManager(cores[0]!.object, cores[0]!.source, fetcher);
    if (certManager) plan.certManager = certManager;
  }
  return plan;
}

/** One provider's configuration (Secret, additional manifests), version (newest when unpinned), release and contract, into `planned`. */
async function planProvider(
  planned: PlannedProvider,
  inputs: KubeObject[],
  fetcher: ProviderFetcher,
  unreadable: ReadonlyMap<string, Problem> | undefined,
): Promise<void> {
  const { provider, origin } = planned;
  const object = describeProvider(provider);
  const namespace = provider.metadata.namespace ?? 'default';
  const unread = (path: string): Problem | undefined => {
    const problem = unreadable?.get(providerInputKey(provider, path));
    if (problem) planned.problems.push({ source: origin, ...problem });
    return problem;
  };
  const secret = provider.spec?.configSecret;
  if (secret && !unread('spec.configSecret')) {
    const found = findInput(inputs, ['Secret', 'ConfigMap'], secret.name, secret.namespace ?? namespace);
    if (!found)
      planned.problems.push({
        source: origin,
        object,
        path: 'spec.configSecret',
        message: `names ${secret.namespace ?? namespace}/${secret.name}, which is not among the inputs; add the Secret (or a ConfigMap of the same name) holding the provider's variables`,
      });
    else planned.variables = keyValues(found);
  }
  const extra = provider.spec?.additionalManifests;
  if (extra && !unread('spec.additionalManifests')) {
    const found = findInput(inputs, ['ConfigMap'], extra.name, extra.namespace ?? namespace);
    const manifests = found ? keyValues(found).get('manifests') : undefined;
    if (manifests === undefined)
      planned.problems.push({
        source: origin,
        object,
        path: 'spec.additionalManifests',
        message: `names ConfigMap ${extra.namespace ?? namespace}/${extra.name}, which is not among the inputs or has no data.manifests`,
      });
    else planned.additionalManifests = manifests;
  }
  if (provider.spec?.fetchConfig?.selector && unread('spec.fetchConfig.selector')) return;
  try {
    if (!planned.pinned) {
      const newest = newestVersion(await fetcher.versions(provider, inputs));
      if (!newest) {
        planned.problems.push({
          source: origin,
          object,
          message:
            'has no spec.version and its source offers no release with a semantic version; set spec.version or publish a release',
        });
        return;
      }
      planned.version = newest;
    }
    planned.release = await fetcher.fetch(provider, planned.version, inputs);
  } catch (error) {
    planned.problems.push({ source: origin, ...fetchProblem(error, object) });
    return;
  }
  readContract(planned);
}

/** cert-manager as the CoreProvider's annotations declare it (none: undefined), fetched; problems are its own. */
async function planCertManager(
  core: CapiProvider,
  origin: string,
  fetcher: ProviderFetcher,
): Promise<PlannedCertManager | undefined> {
  const annotations = core.metadata.annotations ?? {};
  const version = annotations[CERT_MANAGER_VERSION_ANNOTATION];
  const declaredUrl = annotations[CERT_MANAGER_URL_ANNOTATION];
  if (version === undefined && declaredUrl === undefined) return undefined;
  const url = declaredUrl ?? CERT_MANAGER_DEFAULT_URL;
  const planned: PlannedCertManager = {
    core,
    origin,
    dir: CERT_MANAGER_DIR,
    url,
    version: version ?? '',
    problems: [],
  };
  const object = `${describeProvider(core)} cert-manager`;
  if (!fetcher.certManager) {
    planned.problems.push({
      source: origin,
      object,
      message: 'cert-manager cannot be fetched by this provider fetcher',
    });
    return planned;
  }
  try {
    planned.release = await fetcher.certManager(url, version);
    planned.version = planned.release.version;
  } catch (error) {
    planned.problems.push({
      source: origin,
      path: `metadata.annotations[${CERT_MANAGER_URL_ANNOTATION}]`,
      ...fetchProblem(error, object),
    });
  }
  return planned;
}

/** A CoreProvider's contract differs from another provider's: the other is refused, both named. */
export function contractProblems(plan: ProviderPlan): Problem[] {
  const core = plan.providers.find((planned) => planned.provider.kind === 'CoreProvider' && planned.contract);
  if (!core) return [];
  return plan.providers
    .filter((planned) => planned !== core && planned.contract && planned.contract !== core.contract)
    .map((planned) => ({
      object: describeProvider(planned.provider),
      message: `${planned.version} implements Cluster API contract ${planned.contract}, but ${describeProvider(core.provider)} ${core.version} implements ${core.contract}; choose a version of ${planned.provider.metadata.name} whose metadata.yaml names ${core.contract} for its series, or move the core to ${planned.contract}`,
    }));
}
