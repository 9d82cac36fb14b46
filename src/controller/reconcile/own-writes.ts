// The informer cache lags behind our own writes for a moment. A reconcile that starts in that
// moment would compute from the copy before our write and patch with its stale resourceVersion, or
// create again what it just created: a conflict with ourselves. This overlay remembers the objects
// we wrote and serves them until the cache has caught up, someone else wrote after us, or a short
// time has passed (the cache is never far behind; after that it wins).
import type { KubeObject } from '../../api/types.js';
import { objectKey, type OwnWrite } from './apply-desired-state.js';

interface Remembered {
  /** Every resourceVersion the object went through before our last write. */
  before: Set<string>;
  /** We created it: the cache may not show it at all yet. */
  created: boolean;
  /** The cache has shown it: from then on, its absence there means it was deleted. */
  cacheSaw: boolean;
  object: KubeObject;
  at: number;
}

/** Our latest writes, laid over the informer cache. */
export class OwnWrites {
  private readonly objects = new Map<string, Remembered>();

  constructor(private readonly options: { now?: () => number; ttlMs?: number } = {}) {}

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** Remembers the writes of one apply. */
  record(written: Map<string, OwnWrite>): void {
    for (const [key, write] of written) {
      const earlier = this.objects.get(key);
      const before = new Set([
        ...(earlier ? [...earlier.before, earlier.object.metadata.resourceVersion ?? ''] : []),
        ...write.before,
      ]);
      before.delete(write.object.metadata.resourceVersion ?? '');
      this.objects.set(key, {
        before,
        created: (earlier?.created ?? false) || write.created,
        cacheSaw: earlier?.cacheSaw ?? !write.created,
        object: write.object,
        at: this.now(),
      });
    }
  }

  /** Forgets an object the cache reported deleted. */
  forget(object: KubeObject): void {
    this.objects.delete(objectKey(object));
  }

  /**
   * The cached objects of one kind as we know them: an object whose cached version is from before
   * our write is replaced by what we wrote, and objects we created that the cache does not show
   * yet are added. Memories the cache has caught up with are dropped.
   */
  overlay<T extends KubeObject>(apiVersion: string, kind: string, cached: T[]): T[] {
    const ttl = this.options.ttlMs ?? 30_000;
    const now = this.now();
    const seen = new Set<string>();
    const out = cached.map((object) => {
      const key = objectKey(object);
      seen.add(key);
      const remembered = this.objects.get(key);
      if (!remembered) return object;
      remembered.cacheSaw = true;
      const version = object.metadata.resourceVersion ?? '';
      const stale = remembered.before.has(version) || (remembered.created && version === '');
      if (now - remembered.at < ttl && stale && object.metadata.uid === remembered.object.metadata.uid)
        return remembered.object as T;
      this.objects.delete(key);
      return object;
    });
    for (const [key, remembered] of this.objects) {
      if (remembered.object.apiVersion !== apiVersion || remembered.object.kind !== kind || seen.has(key)) continue;
      if (now - remembered.at >= ttl || !remembered.created || remembered.cacheSaw) {
        // Deleted meanwhile, or the memory is too old to trust: the cache is right.
        this.objects.delete(key);
        continue;
      }
      out.push(remembered.object as T);
    }
    return out;
  }
}
