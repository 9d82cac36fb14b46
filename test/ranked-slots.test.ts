// The bound on helm processes in flight hands a freed slot to the most urgent waiting call.
import { describe, expect, it } from 'vitest';
import { RankedSlots } from '../src/core/ranked-slots.js';

/** Work that ends when the test says so, logging when it starts. */
function gate(log: string[], name: string): { work: () => Promise<string>; open: () => void } {
  let open!: () => void;
  const ended = new Promise<void>((resolve) => (open = resolve));
  return {
    work: async () => {
      log.push(name);
      await ended;
      return name;
    },
    open,
  };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('RankedSlots', () => {
  it('starts the lowest priority first among waiting calls, equal priorities in arrival order, never more than its size at once', async () => {
    const slots = new RankedSlots(2);
    const log: string[] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    const submit = (name: string, priority: number): Promise<string> => {
      const g = gate(log, name);
      gates.set(name, g);
      return slots.run(priority, g.work);
    };
    const all = [
      submit('a', 5),
      submit('b', 5),
      submit('late-low', 3),
      submit('c', 1),
      submit('d', 1),
      submit('values', Number.NEGATIVE_INFINITY),
      submit('e', 9),
    ];
    await turn();
    // Free slots are taken at once, whatever the priority.
    expect(log).toEqual(['a', 'b']);
    expect(slots.waiting).toBe(5);

    for (const [ended, expected] of [
      ['a', 'values'],
      ['b', 'c'],
      ['values', 'd'],
      ['c', 'late-low'],
      ['d', 'e'],
    ] as const) {
      gates.get(ended)!.open();
      await turn();
      expect(log.at(-1)).toBe(expected);
    }
    for (const g of gates.values()) g.open();
    expect(await Promise.all(all)).toEqual(['a', 'b', 'late-low', 'c', 'd', 'values', 'e']);
    expect(slots.waiting).toBe(0);
  });

  it('frees the slot of work that throws, and hands it on', async () => {
    const slots = new RankedSlots(1);
    const failing = slots.run(0, async () => {
      throw new Error('helm could not start');
    });
    const next = slots.run(0, async () => 'ran');
    await expect(failing).rejects.toThrow('helm could not start');
    expect(await next).toBe('ran');
    expect(await slots.run(0, async () => 'free again')).toBe('free again');
  });

  it('keeps the order over many waiting calls (the heap)', async () => {
    const slots = new RankedSlots(1);
    const started: number[] = [];
    const blocker = gate([], 'blocker');
    const first = slots.run(0, blocker.work);
    const priorities = Array.from({ length: 200 }, (_, i) => (i * 7919) % 101);
    const runs = priorities.map((priority, i) => slots.run(priority, async () => void started.push(i)));
    blocker.open();
    await Promise.all([first, ...runs]);
    const expected = priorities
      .map((priority, i) => ({ priority, i }))
      .sort((x, y) => x.priority - y.priority || x.i - y.i)
      .map(({ i }) => i);
    expect(started).toEqual(expected);
  });

  it("maps items at most its size at once, results in the items' order", async () => {
    const slots = new RankedSlots(3);
    let running = 0;
    let most = 0;
    const results = await slots.map([5, 1, 4, 2, 3, 0, 6], async (delay, index) => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, delay));
      running -= 1;
      return `${index}:${delay}`;
    });
    expect(results).toEqual(['0:5', '1:1', '2:4', '3:2', '4:3', '5:0', '6:6']);
    expect(most).toBe(3);
  });
});
