// Records the events a reconcile decided on, at most once per object, reason and message within a
// window: events are history for people, and the same line each reconcile would bury it.
import type { Logger } from '../../core/logger.js';
import type { EventSink } from '../runtime/kube-client.js';
import type { EventIntent } from '../desired-state/event-intents.js';

export interface EventRecorderOptions {
  sink: EventSink;
  logger: Logger;
  /** An identical event is not recorded again within this window. Default 1 hour. */
  windowMs?: number;
  now?: () => number;
  /** How many recent events are remembered. Default 10000. */
  capacity?: number;
}

/** Records event intents through an EventSink, deduplicated in memory. */
export class EventRecorder {
  private readonly recent = new Map<string, number>();
  private readonly windowMs: number;
  private readonly now: () => number;
  private readonly capacity: number;

  constructor(private readonly options: EventRecorderOptions) {
    this.windowMs = options.windowMs ?? 3_600_000;
    this.now = options.now ?? Date.now;
    this.capacity = options.capacity ?? 10_000;
  }

  /** Records the intents not seen recently. Failures are logged; events never fail a reconcile. */
  async record(intents: EventIntent[]): Promise<number> {
    let recorded = 0;
    for (const intent of intents) {
      const key = `${intent.regarding.kind}/${intent.regarding.namespace}/${intent.regarding.name}/${intent.regarding.uid ?? ''}\n${intent.reason}\n${intent.message}`;
      const seen = this.recent.get(key);
      const now = this.now();
      if (seen !== undefined && now - seen < this.windowMs) continue;
      try {
        await this.options.sink.recordEvent(intent);
        recorded += 1;
        this.recent.delete(key);
        this.recent.set(key, now);
        if (this.recent.size > this.capacity) this.recent.delete(this.recent.keys().next().value as string);
      } catch (error) {
        // Events are best effort: the status already says the same, so a lost event must not block it.
        this.options.logger.warn(
          {
            reason: intent.reason,
            kind: intent.regarding.kind,
            namespace: intent.regarding.namespace,
            name: intent.regarding.name,
            error: error instanceof Error ? error.message : String(error),
          },
          'could not record an event',
        );
      }
    }
    return recorded;
  }
}
