// The controller's view of the cluster: informers for the kinds watched from the start, plus sets
// started on demand for kinds found at run time (provider kinds, control planes), found through
// discovery. In namespaced mode every namespaced kind is listed and watched in that namespace
// only, so a Role there is all the controller needs.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { KubeObject } from '../../api/types.js';
import { InformerSet } from './informer-set.js';
import type { KindReadState, ObjectCache, WatchedKind, WatchEvent } from './runtime-contract.js';
import { kindId } from './runtime-contract.js';
import {
  type DiscoverPreferredVersions,
  discoverWithClient,
  KindDiscovery,
  kindRefKey,
  type KindLookup,
  type KindRef,
  preferredVersionsWithClient,
} from './kind-discovery.js';
import { describeKubeError } from './informer-set.js';
import { compareText } from '../../core/compare-text.js';

/** An informer cache that can take on kinds found at run time (provider kinds, control planes). */
export interface KindCache extends ObjectCache {
  /** How the API server serves these kinds (plural, scope), or why it does not. */
  resolveKinds(refs: KindRef[]): Promise<Map<string, KindLookup>>;
  /** Watches these kinds too (idempotent); true once each has listed or is known not to be served. */
  ensureWatched(kinds: WatchedKind[]): boolean;
  /** The version the API server prefers for each of these groups it serves (references that name a group only, as v1beta2's do). */
  preferredVersions(groups: string[]): Promise<Map<string, string>>;
}

export interface InformerCacheOptions {
  kubeConfig: KubeConfig;
  /** Kinds watched from the start (with their namespace, if only one). */
  kinds: WatchedKind[];
  onEvent: (event: WatchEvent) => void;
  logger: Logger;
  onRestart?: (kind: WatchedKind) => void;
  /** Finds the preferred version of the groups of `preferredVersion` kinds (default: the API server's `/apis`). */
  preferredVersions?: DiscoverPreferredVersions;
  /** How long a newly watched kind may take to list before reconciles go on without it. Default 10 s. */
  listGraceMs?: number;
  /** Namespaced kinds found at run time are watched in this namespace only (namespaced mode). */
  namespace?: string;
  discovery?: KindDiscovery;
}

/** The runtime's informers, plus sets started on demand for kinds found at run time. */
export class InformerCache implements KindCache {
  private core: InformerSet;
  private watched: WatchedKind[];
  /** The version watched for each `preferredVersion` kind (`group/plural`), once discovery said. */
  private readonly servedVersions = new Map<string, string>();
  /** Preferred versions of the groups references name without a version. */
  private readonly groupVersions = new Map<string, string>();
  private readonly dynamic = new Map<string, InformerSet>();
  private readonly since = new Map<string, number>();
  private readonly givenUp = new Set<string>();
  private readonly listGraceMs: number;
  private readonly discovery: KindDiscovery;
  private running = false;

  constructor(private readonly options: InformerCacheOptions) {
    this.watched = [...options.kinds];
    this.listGraceMs = options.listGraceMs ?? 10_000;
    this.discovery = options.discovery ?? new KindDiscovery(discoverWithClient(options.kubeConfig));
    this.core = this.makeSet(options.kinds);
  }

  private makeSet(kinds: WatchedKind[]): InformerSet {
    return new InformerSet({
      kubeConfig: this.options.kubeConfig,
      kinds,
      onEvent: this.options.onEvent,
      logger: this.options.logger,
      ...(this.options.onRestart ? { onRestart: this.options.onRestart } : {}),
    });
  }

  async start(): Promise<void> {
    this.running = true;
    await this.watchPreferredVersions();
    await this.core.start();
    await Promise.all([...this.dynamic.values()].map((set) => set.start()));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all([this.core.stop(), ...[...this.dynamic.values()].map((set) => set.stop())]);
  }

  whenSynced(signal?: AbortSignal): Promise<void> {
    return this.core.whenSynced(signal);
  }

  synced(): boolean {
    return this.core.synced();
  }

  /**
   * Before anything is watched: the kinds that follow the API server's preferred version get it
   * (the declared version stays when discovery fails or does not know the group, so a cluster
   * without the newer version works as before; the controller is restarted to follow a change).
   */
  private async watchPreferredVersions(): Promise<void> {
    const following = this.watched.filter((kind) => kind.preferredVersion);
    if (following.length === 0) return;
    let versions: Map<string, string>;
    try {
      versions = await (this.options.preferredVersions ?? preferredVersionsWithClient(this.options.kubeConfig))([
        ...new Set(following.map((kind) => kind.group)),
      ]);
    } catch (error) {
      this.options.logger.warn(
        { error: String(describeKubeError(error)['message']) },
        'Could not read the API groups; watching the declared versions',
      );
      return;
    }
    for (const kind of following) {
      const version = versions.get(kind.group);
      if (version === undefined || version === kind.version) continue;
      this.servedVersions.set(`${kind.group}/${kind.plural}`, version);
      this.options.logger.info(
        { kind: kind.kind, apiVersion: `${kind.group}/${version}` },
        'Watching the version the API server prefers',
      );
    }
    if (this.servedVersions.size === 0) return;
    this.watched = this.watched.map((kind) => this.served(kind));
    this.core = this.makeSet(this.options.kinds.map((kind) => this.served(kind)));
  }

  /** The kind as it is watched: a `preferredVersion` kind in the version the API server prefers. */
  private served<
    T extends Pick<WatchedKind, 'group' | 'version' | 'plural'> & { preferredVersion?: boolean | undefined },
  >(kind: T): T {
    const version = kind.preferredVersion ? this.servedVersions.get(`${kind.group}/${kind.plural}`) : undefined;
    return version === undefined ? kind : { ...kind, version };
  }

  /** Every watched entry of a kind (one per namespace it is watched in) and the set holding it. */
  private entriesOf(
    declared: Pick<WatchedKind, 'group' | 'version' | 'plural'> & { preferredVersion?: boolean | undefined },
  ): [WatchedKind, InformerSet][] {
    const kind = this.served(declared);
    const id = kindId(kind);
    const entries: [WatchedKind, InformerSet][] = [];
    for (const watched of this.watched) {
      if (kindId(watched) !== id) continue;
      const set = this.dynamic.get(this.entryId(watched)) ?? this.core;
      entries.push([watched, set]);
    }
    return entries;
  }

  private entryId(kind: WatchedKind): string {
    return `${kindId(kind)}@${kind.namespace ?? '*'}`;
  }

  list(kind: WatchedKind): KubeObject[] {
    const entries = this.entriesOf(kind);
    const objects = entries.flatMap(([watched, set]) => set.list(watched));
    if (entries.length <= 1) return objects;
    const order = (o: KubeObject) => `${o.metadata.namespace ?? ''}\u0000${o.metadata.name}`;
    return objects.sort((a, b) => compareText(order(a), order(b)));
  }

  readState(kind: WatchedKind): KindReadState {
    const states = this.entriesOf(kind).map(([watched, set]) => set.readState(watched));
    if (states.length === 0) return { listed: false };
    const failing = states.find((state) => state.failing)?.failing;
    const served = states.some((state) => state.served === false)
      ? false
      : states.every((state) => state.served === true)
        ? true
        : undefined;
    return {
      listed: states.every((state) => state.listed),
      ...(served !== undefined ? { served } : {}),
      ...(failing ? { failing } : {}),
    };
  }

  get(kind: WatchedKind, namespace: string | undefined, name: string): KubeObject | undefined {
    for (const [watched, set] of this.entriesOf(kind)) {
      const found = set.get(watched, namespace, name);
      if (found) return found;
    }
    return undefined;
  }

  async preferredVersions(groups: string[]): Promise<Map<string, string>> {
    const missing = groups.filter((group) => !this.groupVersions.has(group));
    if (missing.length > 0) {
      try {
        const found = await (this.options.preferredVersions ?? preferredVersionsWithClient(this.options.kubeConfig))(
          missing,
        );
        // Positive answers are kept (a group's preferred version changes with an upgrade, which restarts us); absent groups are asked again.
        for (const [group, version] of found) this.groupVersions.set(group, version);
      } catch (error) {
        this.options.logger.warn(
          { groups: missing, error: String(describeKubeError(error)['message']) },
          'Could not read the API groups; references naming only a group wait for the next reconcile',
        );
      }
    }
    return new Map(
      groups.flatMap((group) =>
        this.groupVersions.has(group) ? [[group, this.groupVersions.get(group)!] as const] : [],
      ),
    );
  }

  async resolveKinds(refs: KindRef[]): Promise<Map<string, KindLookup>> {
    const result = new Map<string, KindLookup>();
    for (const ref of refs) {
      const key = kindRefKey(ref);
      if (result.has(key)) continue;
      const lookup = await this.discovery.lookup(ref);
      if (lookup.served && lookup.kind.namespaced && this.options.namespace !== undefined)
        result.set(key, { served: true, kind: { ...lookup.kind, namespace: this.options.namespace } });
      else result.set(key, lookup);
    }
    return result;
  }

  ensureWatched(kinds: WatchedKind[]): boolean {
    let ready = true;
    for (const kind of kinds) {
      const id = this.entryId(kind);
      let set = this.entriesOf(kind).find(([watched]) => (watched.namespace ?? '*') === (kind.namespace ?? '*'))?.[1];
      if (!set) {
        set = this.makeSet([kind]);
        this.watched.push(kind);
        this.dynamic.set(id, set);
        this.since.set(id, Date.now());
        this.options.logger.info(
          {
            kind: kind.kind,
            apiVersion: `${kind.group}/${kind.version}`,
            plural: kind.plural,
            namespace: kind.namespace ?? 'all',
          },
          'Watching a kind named by a ClusterStack or Cluster',
        );
        if (this.running) void set.start();
      }
      if (set === this.core || set.isServed(kind) !== undefined) continue;
      // A kind that keeps failing (no RBAC rule for it, say) must not hold every reconcile back:
      // after a grace period the controller goes on without it, and the informer keeps retrying.
      const waited = Date.now() - (this.since.get(id) ?? 0);
      if (waited < this.listGraceMs) ready = false;
      else if (!this.givenUp.has(id)) {
        this.givenUp.add(id);
        this.options.logger.warn(
          { kind: kind.kind, apiVersion: `${kind.group}/${kind.version}`, waitedMs: waited },
          'A watched kind has not listed; going on without it (check the RBAC rules for it)',
        );
      }
    }
    return ready;
  }
}
