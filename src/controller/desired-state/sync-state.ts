// What the GitOps engine says about the directories we published: Flux Kustomizations or Argo CD
// Applications are matched to unit directories by their path, and their status is read into one
// verdict per directory. Pure: the objects come from the informer caches.
import type { KubeObject } from '../../api/types.js';
import { findCondition } from './conditions.js';

export type SyncEngine = 'flux' | 'argocd';
type UnitSyncState = 'synced' | 'out-of-sync' | 'failed' | 'progressing';

export interface UnitSync {
  engine: SyncEngine;
  /** `Flux Kustomization <ns>/<name>` or `Argo CD Application <ns>/<name>`. */
  source: string;
  state: UnitSyncState;
  /** The revision the engine applied, as it reports it. */
  revision?: string;
  message: string;
  /** Per object, where the engine reports it (Argo CD): key from resourceKey(). */
  resources?: Map<string, { synced: boolean; message?: string }>;
}

/** Which of our revisions came first, so an applied revision can be compared with a unit's. */
export interface RevisionOrder {
  /** Revisions this controller published or found, oldest first. */
  history: string[];
  /** Per unit directory, the revision in which its files last changed. */
  unitRevisions: Map<string, string>;
  /**
   * Pull-request mode: unit directories whose rendered files the base branch (what the engine
   * applies) does not hold yet, with the pull request proposing them. No applied revision counts
   * for them, whatever it is: a squash or rebase merge makes commits of its own.
   */
  pending?: Map<string, string>;
}

export const FLUX_KUSTOMIZATION = {
  group: 'kustomize.toolkit.fluxcd.io',
  version: 'v1',
  kind: 'Kustomization',
  plural: 'kustomizations',
} as const;
export const ARGO_APPLICATION = {
  group: 'argoproj.io',
  version: 'v1alpha1',
  kind: 'Application',
  plural: 'applications',
} as const;

export function resourceKey(resource: { group?: string; kind: string; namespace?: string; name: string }): string {
  return `${resource.group ?? ''}/${resource.kind}/${resource.namespace ?? ''}/${resource.name}`;
}

function normalizePath(value: string): string {
  return value
    .replace(/\\/g, '/')
    .split('/')
    .filter((part) => part !== '' && part !== '.')
    .join('/');
}

/**
 * The paths that cover a unit directory, most specific first: the directory itself, then the
 * aggregating directories above it (`clusters/<ns>/<cluster>`, `management/<ns>`, `management`).
 */
function coveringPaths(dir: string): string[] {
  const parts = dir.split('/');
  const stop = parts[0] === 'clusters' ? 3 : 1;
  const paths: string[] = [];
  for (let end = parts.length; end >= stop; end -= 1) paths.push(parts.slice(0, end).join('/'));
  return paths;
}

/** The 40-hex commit sha inside a Flux revision (`main@sha1:<sha>`) or an Argo CD revision. */
function commitOf(revision: string | undefined): string | undefined {
  if (!revision) return undefined;
  const match = /([0-9a-f]{40}|sha256:[0-9a-f]{64})/.exec(revision);
  return match ? match[1] : revision;
}

/** Whether `applied` includes the unit's last change; unknown revisions (older, or foreign) count as applied. */
function appliedIncludes(
  applied: string | undefined,
  dir: string,
  order: RevisionOrder,
): { ok: boolean; wanted?: string; proposedIn?: string } {
  const proposedIn = order.pending?.get(dir);
  if (proposedIn !== undefined) return { ok: false, proposedIn };
  const wanted = order.unitRevisions.get(dir);
  const appliedCommit = commitOf(applied);
  if (!wanted || !appliedCommit) return { ok: true };
  if (appliedCommit === wanted) return { ok: true };
  const appliedIndex = order.history.indexOf(appliedCommit);
  const wantedIndex = order.history.indexOf(wanted);
  if (appliedIndex < 0 || wantedIndex < 0) return { ok: appliedIndex >= 0 || wantedIndex < 0, wanted };
  return { ok: appliedIndex >= wantedIndex, wanted };
}

function waitingFor(applied: { wanted?: string; proposedIn?: string }, verb: string): string {
  if (applied.proposedIn !== undefined)
    return `the change is proposed in ${applied.proposedIn} and not merged yet: the branch the engine reads does not hold it`;
  return `waiting for it to ${verb} commit ${applied.wanted}`;
}

function describe(engine: SyncEngine, object: KubeObject): string {
  return `${engine === 'flux' ? 'Flux Kustomization' : 'Argo CD Application'} ${object.metadata.namespace ?? 'default'}/${object.metadata.name}`;
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Flux's record of its last finished attempt (`status.history`, newest first): the outcome (a Ready reason) and the revision. */
function lastFluxAttempt(status: Record<string, unknown>): { outcome: string; revision?: string } | undefined {
  const history = Array.isArray(status['history']) ? (status['history'] as unknown[]) : [];
  const latest = record(history[0]);
  const outcome = text(latest['lastReconciledStatus']);
  if (!outcome) return undefined;
  const revision = text(record(latest['metadata'])['revision']);
  return { outcome, ...(revision ? { revision } : {}) };
}

/**
 * Ready reasons of a Kustomization on its way rather than failed, which kustomize-controller
 * requeues by itself: a dependency not Ready yet, no artifact of its source yet (right after the
 * bootstrap, before source-controller fetched it), health checks cancelled for a newer revision.
 */
const FLUX_WAITING_REASONS = new Set(['Progressing', 'DependencyNotReady', 'ArtifactFailed', 'HealthCheckCanceled']);

function fluxVerdict(object: KubeObject, dir: string, order: RevisionOrder): UnitSync {
  const source = describe('flux', object);
  const status = record(object['status']);
  const spec = record(object['spec']);
  const revision = text(status['lastAppliedRevision']);
  const ready = findCondition(
    status['conditions'] as { type: string; status?: string; reason?: string; message?: string }[] | undefined,
    'Ready',
  );
  const base = { engine: 'flux' as const, source, ...(revision ? { revision } : {}) };
  if (spec['suspend'] === true)
    return {
      ...base,
      state: 'out-of-sync',
      message: `${source} is suspended: Flux neither applies changes nor corrects drift; resume it with flux resume kustomization`,
    };
  if (!ready || ready.status === 'Unknown') {
    // kustomize-controller marks Ready Unknown at the start of every reconcile, the periodic and
    // retried ones of a revision it already finished too. Then its last finished attempt says
    // more than "in progress": a failure stays a failure while Flux tries again (no flapping
    // between SyncFailed and Progressing, with an Event each time, on every retry), and the
    // revision it last applied and found healthy stays applied while Flux checks it again.
    const last = lastFluxAttempt(status);
    if (last && last.outcome !== 'ReconciliationSucceeded') {
      return {
        ...base,
        state: 'failed',
        message: `${source} is trying again; its last attempt${last.revision ? ` (${last.revision})` : ''} failed (${last.outcome})`,
      };
    }
    if (!last || revision === undefined || last.revision !== revision) {
      return {
        ...base,
        state: 'progressing',
        message: `${source} is reconciling${ready?.message ? `: ${ready.message}` : ''}`,
      };
    }
  } else if (ready.status === 'False') {
    const waiting = FLUX_WAITING_REASONS.has(ready.reason ?? '');
    return {
      ...base,
      state: waiting ? 'progressing' : 'failed',
      message: `${source} is not ready (${ready.reason ?? 'NotReady'}): ${ready.message ?? 'no message'}`,
    };
  }
  // As kstatus reads it: Flux sets observedGeneration when a reconcile succeeds, so a lower one
  // means the spec changed (a new path, decryption, health checks) since what it applied. It also
  // covers the moment between Flux's two status patches (conditions first, then
  // lastAppliedRevision and observedGeneration): a new Kustomization is Ready=True there with no
  // applied revision (observedGeneration -1, the CRD's default), which must not count as applied.
  const generation = record(object.metadata)['generation'];
  const observed = status['observedGeneration'];
  if (typeof generation === 'number' && typeof observed === 'number' && observed < generation) {
    const what =
      observed < 1
        ? 'has not finished its first reconcile'
        : `has not applied its changed spec yet (generation ${generation}, last applied ${observed})`;
    return { ...base, state: 'progressing', message: `${source} ${what}` };
  }
  const applied = appliedIncludes(revision, dir, order);
  if (!applied.ok)
    return {
      ...base,
      state: 'progressing',
      message: `${source} applied ${revision ?? 'nothing yet'}; ${waitingFor(applied, 'apply')}`,
    };
  return { ...base, state: 'synced', message: `${source} applied ${revision ?? 'the latest revision'}` };
}

function argoVerdict(object: KubeObject, dir: string, order: RevisionOrder): UnitSync {
  const source = describe('argocd', object);
  const status = record(object['status']);
  const sync = record(status['sync']);
  const health = record(status['health']);
  const operation = record(status['operationState']);
  const revision = text(sync['revision']);
  const syncStatus = text(sync['status']) ?? 'Unknown';
  const healthStatus = text(health['status']) ?? 'Unknown';
  const resources = new Map<string, { synced: boolean; message?: string }>();
  for (const item of Array.isArray(status['resources']) ? (status['resources'] as unknown[]) : []) {
    const resource = record(item);
    const kind = text(resource['kind']);
    const name = text(resource['name']);
    if (!kind || !name) continue;
    const healthMessage = text(record(resource['health'])['message']);
    const entry: { synced: boolean; message?: string } = { synced: resource['status'] === 'Synced' };
    if (!entry.synced)
      entry.message = `${text(resource['status']) ?? 'Unknown'}${healthMessage ? `: ${healthMessage}` : ''}`;
    resources.set(
      resourceKey({ group: text(resource['group']) ?? '', kind, namespace: text(resource['namespace']) ?? '', name }),
      entry,
    );
  }
  const base = { engine: 'argocd' as const, source, ...(revision ? { revision } : {}), resources };
  const phase = text(operation['phase']);
  if (phase === 'Failed' || phase === 'Error') {
    return {
      ...base,
      state: 'failed',
      message: `${source}: sync ${phase.toLowerCase()}: ${text(operation['message']) ?? 'no message'}`,
    };
  }
  // A sync under way (the first sync of a new Application, or of a new revision) is progress: the
  // live objects differ from Git until it finishes, which is not drift.
  if (phase === 'Running' || phase === 'Terminating') {
    const target = text(record(record(operation['operation'])['sync'])['revision']) ?? revision;
    return {
      ...base,
      state: 'progressing',
      message: `${source} is syncing${target ? ` ${target}` : ''} (${syncStatus}, ${healthStatus})${text(operation['message']) ? `: ${text(operation['message'])}` : ''}`,
    };
  }
  if (syncStatus === 'OutOfSync') {
    const drifted = [...resources.entries()]
      .filter(([, entry]) => !entry.synced)
      .map(([key]) => key.split('/').slice(1).filter(Boolean).join('/'));
    const which =
      drifted.length > 0
        ? ` (${drifted.slice(0, 5).join(', ')}${drifted.length > 5 ? `, ${drifted.length - 5} more` : ''})`
        : '';
    return {
      ...base,
      state: 'out-of-sync',
      message: `${source} is OutOfSync${which}: the live objects differ from Git (drift, or a sync pending); self-heal or sync the Application`,
    };
  }
  if (healthStatus === 'Degraded' || healthStatus === 'Missing') {
    return {
      ...base,
      state: 'failed',
      message: `${source} is ${syncStatus} but ${healthStatus}${text(health['message']) ? `: ${text(health['message'])}` : ''}`,
    };
  }
  if (syncStatus !== 'Synced' || healthStatus !== 'Healthy') {
    return { ...base, state: 'progressing', message: `${source} is ${syncStatus} and ${healthStatus}` };
  }
  const applied = appliedIncludes(revision, dir, order);
  if (!applied.ok)
    return {
      ...base,
      state: 'progressing',
      message: `${source} synced ${revision ?? 'nothing yet'}; ${waitingFor(applied, 'sync')}`,
    };
  return {
    ...base,
    state: 'synced',
    message: `${source} is Synced and Healthy at ${revision ?? 'the latest revision'}`,
  };
}

function enginePaths(engine: SyncEngine, object: KubeObject): string[] {
  const spec = record(object['spec']);
  if (engine === 'flux') return text(spec['path']) ? [text(spec['path'])!] : [];
  const sources = [
    record(spec['source']),
    ...(Array.isArray(spec['sources']) ? (spec['sources'] as unknown[]).map(record) : []),
  ];
  return sources.map((source) => text(source['path'])).filter((path): path is string => path !== undefined);
}

/**
 * One verdict per unit directory that some Kustomization or Application covers; the most specific
 * object wins (a per-stage one over a per-cluster one). Paths are indexed by their trailing
 * segments, so thousands of directories and objects cost one lookup per covering path.
 */
export function syncStateOf(
  engine: SyncEngine,
  objects: KubeObject[],
  unitDirs: Iterable<string>,
  order: RevisionOrder,
  outputPath = '',
): Map<string, UnitSync> {
  void outputPath; // a path under --path ends with the directory anyway; kept for callers that know it
  const bySuffix = new Map<string, KubeObject>();
  for (const object of objects) {
    for (const path of enginePaths(engine, object)) {
      const segments = normalizePath(path).split('/').filter(Boolean);
      for (let start = 0; start < segments.length; start += 1) {
        const suffix = segments.slice(start).join('/');
        if (!bySuffix.has(suffix)) bySuffix.set(suffix, object);
      }
    }
  }
  const result = new Map<string, UnitSync>();
  for (const dir of unitDirs) {
    const candidate = coveringPaths(dir).find((path) => bySuffix.has(path));
    if (!candidate) continue;
    const object = bySuffix.get(candidate)!;
    result.set(dir, engine === 'flux' ? fluxVerdict(object, dir, order) : argoVerdict(object, dir, order));
  }
  return result;
}
