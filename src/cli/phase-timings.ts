// Where a CLI run's time goes, for `npm run bench` and for anyone asking why a command is slow:
// with CLUSTERSTACK_TIMINGS=1 the run ends with one line on stderr naming each phase and its
// milliseconds, from the process's start (node's own boot included) to the command's end. The
// phases before `start-up` are the process getting ready (node, then loading the command's
// modules); the rest are the command's own work. Off by default: `--json` runs stay silent.
const TIMINGS_ENV = 'CLUSTERSTACK_TIMINGS';

interface Mark {
  phase: string;
  /** performance.now(): milliseconds since the process started. */
  at: number;
  note?: string;
}

const marks: Mark[] = [];

/** Ends the phase `phase` now (it began where the previous one ended, or at the process's start). */
export function endPhase(phase: string, note?: string): void {
  marks.push({ phase, at: performance.now(), ...(note ? { note } : {}) });
}

/** Forgets the marks of an earlier run in this process (in-process tests run many). */
export function resetPhases(): void {
  marks.length = 0;
}

/** Whether the environment asks for the timings line. */
export function timingsWanted(env: NodeJS.ProcessEnv): boolean {
  const value = env[TIMINGS_ENV];
  return value !== undefined && value !== '' && value !== '0' && value !== 'false';
}

/**
 * `timings: node=41ms modules=96ms start-up=137ms inputs=38ms ... total=402ms`: each phase's own
 * milliseconds; `start-up` is the sum of the phases before it (the time until the command begins
 * its own work), `total` the process's life so far. A phase with a note adds it in parentheses.
 */
export function formatPhaseTimings(now: number = performance.now()): string {
  const parts: string[] = [];
  let previous = 0;
  for (const mark of marks) {
    // start-up is by definition the phases before it: their sum, not a clock read a moment later.
    const own = mark.phase === 'start-up' ? previous : mark.at - previous;
    parts.push(`${mark.phase}=${Math.round(own)}ms${mark.note ? ` (${mark.note})` : ''}`);
    previous = mark.at;
  }
  parts.push(`total=${Math.round(now)}ms`);
  return `timings: ${parts.join(' ')}\n`;
}
