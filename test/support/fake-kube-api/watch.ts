/** Watch sessions: replay from a resourceVersion, live events, selector transitions, bookmarks and 410 Gone. */
import { clone, type KubeObject } from './kube-object.js';
import { parseFieldSelector, parseLabelSelector } from './label-selector.js';
import { typeKey } from './object-api.js';
import type { ResourceType } from './resources.js';
import { badRequest, failureStatus } from './status.js';
import type { ObjectStore, StoredEvent } from './store.js';

type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent {
  type: WatchEventType;
  object: unknown;
}

export interface WatchRequest {
  type: ResourceType;
  namespace?: string;
  resourceVersion?: string;
  labelSelector?: string;
  fieldSelector?: string;
  allowWatchBookmarks: boolean;
}

/** Where a session writes; the HTTP layer turns it into newline-delimited JSON. */
export interface WatchSink {
  send(event: WatchEvent): void;
  end(): void;
}

interface Session {
  request: WatchRequest;
  sink: WatchSink;
  close(): void;
}

/** Keeps the open watches and feeds them from the store. */
export class WatchHub {
  private readonly sessions = new Set<Session>();

  constructor(private readonly store: ObjectStore) {}

  /**
   * Starts a watch. Throws an ApiError (before anything is written) for bad selectors or versions;
   * a too old resourceVersion is not thrown but sent as an ERROR event, as the real server does.
   */
  open(request: WatchRequest, sink: WatchSink): () => void {
    const labels = parseLabelSelector(request.labelSelector);
    const fields = parseFieldSelector(request.fieldSelector);
    const key = typeKey(request.type);
    const visible = (obj: KubeObject | undefined): boolean =>
      obj !== undefined &&
      (request.namespace === undefined || obj.metadata.namespace === request.namespace) &&
      labels(obj.metadata.labels) &&
      fields(obj);

    const translate = (event: StoredEvent): WatchEvent | undefined => {
      if (event.typeKey !== key) return undefined;
      const now = event.type !== 'DELETED' && visible(event.object);
      const before = event.type !== 'ADDED' && visible(event.previous);
      // An object that moves into or out of the selector appears as ADDED or DELETED to this watch.
      if (now && before) return { type: 'MODIFIED', object: event.object };
      if (now) return { type: 'ADDED', object: event.object };
      if (before) return { type: 'DELETED', object: event.object };
      return undefined;
    };

    const rv = request.resourceVersion;
    let replay: WatchEvent[];
    if (rv === undefined || rv === '' || rv === '0') {
      // "Start at most recent": the current state arrives as synthetic ADDED events first.
      replay = this.store
        .list(key, request.namespace)
        .filter(visible)
        .map((object) => ({ type: 'ADDED', object }));
    } else {
      if (!/^[0-9]+$/.test(rv)) throw badRequest(`invalid resource version: ${JSON.stringify(rv)}`);
      const events = this.store.eventsSince(Number(rv));
      if (events === 'expired') {
        sink.send(this.expiredEvent(rv));
        sink.end();
        return () => {};
      }
      replay = events.map(translate).filter((e): e is WatchEvent => e !== undefined);
    }

    let closed = false;
    const session: Session = {
      request,
      sink,
      close: () => {
        if (closed) return;
        closed = true;
        unsubscribe();
        this.sessions.delete(session);
      },
    };
    const unsubscribe = this.store.subscribe((event) => {
      const translated = translate(event);
      if (translated) sink.send({ type: translated.type, object: clone(translated.object) });
    });
    this.sessions.add(session);
    for (const event of replay) sink.send(event);
    return session.close;
  }

  /** Sends the 410 Gone ERROR event to every open watch and ends it, so informers relist. */
  expireAll(): void {
    this.store.compact();
    for (const session of [...this.sessions]) {
      session.sink.send(this.expiredEvent(session.request.resourceVersion ?? '0'));
      session.close();
      session.sink.end();
    }
  }

  /** Sends a BOOKMARK at the current resourceVersion to every watch that asked for bookmarks. */
  bookmarkAll(): void {
    for (const session of this.sessions) {
      if (!session.request.allowWatchBookmarks) continue;
      const { apiVersion, kind } = session.request.type;
      session.sink.send({
        type: 'BOOKMARK',
        object: { apiVersion, kind, metadata: { resourceVersion: String(this.store.currentRevision()) } },
      });
    }
  }

  /** Ends every open watch cleanly, as a server does when its watch timeout passes. */
  endAll(): void {
    for (const session of [...this.sessions]) {
      session.close();
      session.sink.end();
    }
  }

  openCount(): number {
    return this.sessions.size;
  }

  private expiredEvent(rv: string): WatchEvent {
    return {
      type: 'ERROR',
      object: failureStatus(
        410,
        `too old resource version: ${rv} (${this.store.oldestWatchableRevision()})`,
        'Expired',
      ),
    };
  }
}
