/** Object storage with one global resourceVersion counter and a bounded event history, like etcd behind the API server. */
import { clone, type KubeObject } from './kube-object.js';

type StoredEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoredEvent {
  type: StoredEventType;
  resourceVersion: number;
  /** `<group>/<plural>`: events and objects are keyed by resource, not by version. */
  typeKey: string;
  object: KubeObject;
  /** The state before this event, so watches with selectors can turn a MODIFIED into ADDED or DELETED. */
  previous?: KubeObject;
}

export type StoreListener = (event: StoredEvent) => void;

function objectKey(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`;
}

/** Holds objects and what happened to them; knows nothing about HTTP or API semantics. */
export class ObjectStore {
  private revision = 0;
  private readonly objects = new Map<string, Map<string, KubeObject>>();
  private history: StoredEvent[] = [];
  /** Events at or below this revision are no longer available to watches (etcd compaction). */
  private compacted = 0;
  private readonly listeners = new Set<StoreListener>();

  constructor(private readonly historyLimit: number) {}

  currentRevision(): number {
    return this.revision;
  }

  get(typeKey: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const found = this.objects.get(typeKey)?.get(objectKey(namespace, name));
    return found ? clone(found) : undefined;
  }

  /** Objects of one resource, sorted by namespace then name as etcd returns them. */
  list(typeKey: string, namespace?: string): KubeObject[] {
    const all = [...(this.objects.get(typeKey)?.entries() ?? [])];
    all.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return all
      .map(([, obj]) => clone(obj))
      .filter((obj) => namespace === undefined || obj.metadata.namespace === namespace);
  }

  /** Every stored object with its resource key, for garbage collection and namespace cleanup. */
  entries(): Array<{ typeKey: string; object: KubeObject }> {
    const result: Array<{ typeKey: string; object: KubeObject }> = [];
    for (const [typeKey, objects] of this.objects)
      for (const object of objects.values()) result.push({ typeKey, object: clone(object) });
    return result;
  }

  /** Stores a new or changed object under the next revision and tells watchers; returns what was stored. */
  put(typeKey: string, obj: KubeObject): KubeObject {
    const stored = clone(obj);
    const bucket = this.objects.get(typeKey) ?? new Map<string, KubeObject>();
    this.objects.set(typeKey, bucket);
    const key = objectKey(stored.metadata.namespace, stored.metadata.name ?? '');
    const previous = bucket.get(key);
    stored.metadata.resourceVersion = String(++this.revision);
    bucket.set(key, stored);
    this.record({
      type: previous ? 'MODIFIED' : 'ADDED',
      resourceVersion: this.revision,
      typeKey,
      object: clone(stored),
      ...(previous ? { previous: clone(previous) } : {}),
    });
    return clone(stored);
  }

  /** Removes an object; the DELETED event carries the deletion's own revision, as on a real server. */
  remove(
    typeKey: string,
    namespace: string | undefined,
    name: string,
    finalState?: KubeObject,
  ): KubeObject | undefined {
    const bucket = this.objects.get(typeKey);
    const previous = bucket?.get(objectKey(namespace, name));
    if (!bucket || !previous) return undefined;
    bucket.delete(objectKey(namespace, name));
    // An object released by an update (last finalizer removed) is reported in that final state.
    const deleted = clone(finalState ?? previous);
    deleted.metadata.resourceVersion = String(++this.revision);
    this.record({
      type: 'DELETED',
      resourceVersion: this.revision,
      typeKey,
      object: clone(deleted),
      previous: clone(previous),
    });
    return deleted;
  }

  /** Events after `revision`, or 'expired' when some of them were already compacted away. */
  eventsSince(revision: number): StoredEvent[] | 'expired' {
    if (revision < this.compacted) return 'expired';
    return this.history.filter((e) => e.resourceVersion > revision).map((e) => ({ ...e, object: clone(e.object) }));
  }

  /** The oldest revision a watch can still start from; the real server names it in its 410 message. */
  oldestWatchableRevision(): number {
    return this.compacted;
  }

  /** Forgets all history so every watch from an older revision gets 410 Gone. */
  compact(): void {
    this.compacted = this.revision;
    this.history = [];
  }

  subscribe(listener: StoreListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private record(event: StoredEvent): void {
    this.history.push(event);
    if (this.history.length > this.historyLimit) {
      const dropped = this.history.splice(0, this.history.length - this.historyLimit);
      this.compacted = dropped[dropped.length - 1]?.resourceVersion ?? this.compacted;
    }
    for (const listener of [...this.listeners]) listener(event);
  }
}
