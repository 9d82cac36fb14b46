// Reads the shards bench's process timeline (CSK_BENCH_TIMELINE: `helm <start> <end> <cwd>` per helm
// process, `mark <time> <shards> <what>` from the bench) and says how each shard used its helm slots
// during a wave. Idle slot time comes in two kinds that have different causes: slots idle while
// other helm processes of the shard run (work not handed to helm soon enough: the values chunks),
// and time with no helm process at all between the shard's first and last (a publish between two
// renders of one wave).
import { readFileSync } from 'node:fs';

export interface SlotUse {
  shard: string;
  helmCalls: number;
  /** Of those, values-template chunks (run in a generated `values-*` chart directory). */
  valuesCalls: number;
  /** From the shard's first helm start to its last helm end in the wave, seconds. */
  spanS: number;
  /** Share of slots × span during which a slot was idle while another helm process of the shard ran. */
  idleBesideHelm: number;
  /** Share of the span with no helm process of the shard running. */
  idleNoHelm: number;
}

/** Each shard's slot use (`slots` helm processes at most) between the marks `wave-start` and `wave-end` of the run with `shards` shards. */
export function slotUse(timelineFile: string, shards: number, slots: number): SlotUse[] {
  const lines = readFileSync(timelineFile, 'utf8').split('\n');
  const mark = (what: string): number | undefined => {
    const line = lines.findLast((text) => text.startsWith('mark ') && text.endsWith(` ${shards} ${what}`));
    return line === undefined ? undefined : Number(line.split(' ')[1]);
  };
  const from = mark('wave-start');
  const to = mark('wave-end');
  if (from === undefined || to === undefined) return [];
  const byShard = new Map<string, { start: number; end: number; values: boolean }[]>();
  for (const line of lines) {
    const [kind, start, end, cwd] = line.split(' ');
    if (kind !== 'helm' || cwd === undefined) continue;
    const shard = /\/cache-([^/]+)\//.exec(cwd)?.[1];
    if (shard === undefined || Number(start) < from || Number(start) > to) continue;
    const list = byShard.get(shard) ?? [];
    list.push({ start: Number(start), end: Number(end), values: cwd.includes('/values-') });
    byShard.set(shard, list);
  }
  return [...byShard]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([shard, runs]) => {
      const points = runs.flatMap((run) => [
        { at: run.start, delta: 1 },
        { at: run.end, delta: -1 },
      ]);
      points.sort((a, b) => a.at - b.at || a.delta - b.delta);
      let running = 0;
      let besideHelm = 0;
      let noHelm = 0;
      for (let index = 0; index < points.length - 1; index += 1) {
        running += points[index]!.delta;
        const span = points[index + 1]!.at - points[index]!.at;
        if (running === 0) noHelm += span;
        else besideHelm += Math.max(0, slots - running) * span;
      }
      const spanS = points[points.length - 1]!.at - points[0]!.at;
      return {
        shard,
        helmCalls: runs.length,
        valuesCalls: runs.filter((run) => run.values).length,
        spanS,
        idleBesideHelm: spanS > 0 ? besideHelm / (slots * spanS) : 0,
        idleNoHelm: spanS > 0 ? noHelm / spanS : 0,
      };
    });
}

/** One line per shard for the bench's output. */
export function describeSlotUse(uses: readonly SlotUse[], slots: number): string[] {
  return uses.map(
    (use) =>
      `    shard ${use.shard}: ${use.helmCalls} helm calls (${use.valuesCalls} values chunks) over ${use.spanS.toFixed(2)} s on ${slots} slots; idle: ${(100 * use.idleBesideHelm).toFixed(1)}% beside running helm, ${(100 * use.idleNoHelm).toFixed(1)}% with none running`,
  );
}
