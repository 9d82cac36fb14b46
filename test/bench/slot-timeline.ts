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
  /** From the shard's first helm start to the end of its last values chunk, seconds: when the charts all have their values. */
  valuesPhaseS: number;
  /** Share of slots × that phase that was idle. */
  idleValuesPhase: number;
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
      const first = Math.min(...runs.map((run) => run.start));
      const last = Math.max(...runs.map((run) => run.end));
      const valuesEnd = Math.max(first, ...runs.filter((run) => run.values).map((run) => run.end));
      const whole = occupancy(runs, first, last, slots);
      const valuesPhase = occupancy(runs, first, valuesEnd, slots);
      const spanS = last - first;
      return {
        shard,
        helmCalls: runs.length,
        valuesCalls: runs.filter((run) => run.values).length,
        spanS,
        idleBesideHelm: spanS > 0 ? whole.idleBesideHelm / (slots * spanS) : 0,
        idleNoHelm: spanS > 0 ? whole.noHelm / spanS : 0,
        valuesPhaseS: valuesEnd - first,
        idleValuesPhase:
          valuesEnd > first
            ? (valuesPhase.idleBesideHelm + slots * valuesPhase.noHelm) / (slots * (valuesEnd - first))
            : 0,
      };
    });
}

/** Idle slot-seconds beside running helm, and seconds with none running, between `from` and `to`. */
function occupancy(
  runs: readonly { start: number; end: number }[],
  from: number,
  to: number,
  slots: number,
): { idleBesideHelm: number; noHelm: number } {
  const points = runs.flatMap((run) => [
    { at: run.start, delta: 1 },
    { at: run.end, delta: -1 },
  ]);
  points.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let running = 0;
  let idleBesideHelm = 0;
  let noHelm = 0;
  for (let index = 0; index < points.length - 1; index += 1) {
    running += points[index]!.delta;
    const span = Math.min(to, points[index + 1]!.at) - Math.max(from, points[index]!.at);
    if (span <= 0) continue;
    if (running === 0) noHelm += span;
    else idleBesideHelm += Math.max(0, slots - running) * span;
  }
  return { idleBesideHelm, noHelm };
}

/** One line per shard for the bench's output. */
export function describeSlotUse(uses: readonly SlotUse[], slots: number): string[] {
  return uses.map(
    (use) =>
      `    shard ${use.shard}: ${use.helmCalls} helm calls (${use.valuesCalls} values chunks) over ${use.spanS.toFixed(2)} s on ${slots} slots; idle: ${(100 * use.idleBesideHelm).toFixed(1)}% beside running helm, ${(100 * use.idleNoHelm).toFixed(1)}% with none running; all values in after ${use.valuesPhaseS.toFixed(2)} s, ${(100 * use.idleValuesPhase).toFixed(1)}% of the slots idle until then`,
  );
}
