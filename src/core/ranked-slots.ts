// The one bound on work in flight. It hands a freed slot to the most urgent waiting call, not the
// oldest: the helm runner keeps its processes busy with what shortens the render (values that unblock
// charts, long charts before short ones) instead of what was asked for first. Work of one rank (file
// checks, API writes) goes through `map`, in arrival order.

interface Waiting {
  priority: number;
  sequence: number;
  start: () => void;
}

/** `size` slots; a waiting call with a lower priority starts first, equal priorities in arrival order. */
export class RankedSlots {
  #free: number;
  #sequence = 0;
  /** A binary min-heap by (priority, sequence): thousands of waiting renders in the controller. */
  readonly #heap: Waiting[] = [];

  constructor(size: number) {
    this.#free = Math.max(1, Math.floor(size));
  }

  /** Calls waiting for a slot. */
  get waiting(): number {
    return this.#heap.length;
  }

  /** Runs `work` once a slot is free and no more urgent call waits; the slot is freed however it ends. */
  async run<T>(priority: number, work: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free -= 1;
    else await new Promise<void>((start) => this.#push({ priority, sequence: this.#sequence++, start }));
    try {
      return await work();
    } finally {
      const next = this.#pop();
      if (next) next.start();
      else this.#free += 1;
    }
  }

  /** Runs `fn` on every item, at most `size` at once, in order; the results in the items' order. */
  map<T, R>(items: readonly T[], fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
    return Promise.all(items.map((item, index) => this.run(0, () => fn(item, index))));
  }

  #before(a: Waiting, b: Waiting): boolean {
    return a.priority < b.priority || (a.priority === b.priority && a.sequence < b.sequence);
  }

  #push(entry: Waiting): void {
    const heap = this.#heap;
    heap.push(entry);
    for (let at = heap.length - 1; at > 0;) {
      const parent = (at - 1) >> 1;
      if (!this.#before(heap[at]!, heap[parent]!)) break;
      [heap[at], heap[parent]] = [heap[parent]!, heap[at]!];
      at = parent;
    }
  }

  #pop(): Waiting | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length === 0 || last === undefined) return top;
    heap[0] = last;
    for (let at = 0; ;) {
      const left = 2 * at + 1;
      const right = left + 1;
      let first = at;
      if (left < heap.length && this.#before(heap[left]!, heap[first]!)) first = left;
      if (right < heap.length && this.#before(heap[right]!, heap[first]!)) first = right;
      if (first === at) break;
      [heap[at], heap[first]] = [heap[first]!, heap[at]!];
      at = first;
    }
    return top;
  }
}
