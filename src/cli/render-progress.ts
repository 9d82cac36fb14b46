// The progress line `render` keeps on a terminal: units done of all, releases and clusters, and an
// estimate of the time left from the pace of the units helm rendered so far. Only on a TTY and never
// with --json (the caller decides); redrawn at most ten times a second, and cleared at the end.

import type { RenderProgress } from '../render/render-output.js';

const REDRAW_MS = 100;

/** `1m05s`, `42s`: short enough for one terminal line. */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.round(ms / 1000));
  const minutes = Math.floor(total / 60);
  const seconds = total % 60;
  return minutes > 0 ? `${minutes}m${String(seconds).padStart(2, '0')}s` : `${seconds}s`;
}

/**
 * The line for `progress` after `elapsedMs` since the first unit finished. The estimate needs a
 * unit rendered by helm (reused units finish at once and say nothing about the pace).
 */
export function progressLine(progress: RenderProgress, elapsedMs: number): string {
  const left = progress.unitsTotal - progress.unitsDone;
  const eta =
    left === 0
      ? 'done'
      : progress.unitsRendered > 0 && elapsedMs > 0
        ? `about ${formatDuration((elapsedMs / progress.unitsRendered) * left)} left`
        : 'estimating time left';
  return `rendering: ${progress.unitsDone}/${progress.unitsTotal} units (releases ${progress.releasesDone}/${progress.releasesTotal}, clusters ${progress.clustersDone}/${progress.clustersTotal}), ${eta}`;
}

/** An onProgress that redraws one stderr line, and `finish` that ends it. */
export function terminalProgress(
  write: (text: string) => void,
  now: () => number = () => performance.now(),
): { onProgress: (progress: RenderProgress) => void; finish: () => void } {
  let started: number | undefined;
  let lastDraw = -Infinity;
  let width = 0;
  let drawn = false;
  return {
    onProgress: (progress) => {
      const at = now();
      started ??= at;
      const last = progress.unitsDone === progress.unitsTotal;
      if (!last && at - lastDraw < REDRAW_MS) return;
      lastDraw = at;
      const line = progressLine(progress, at - started);
      // Pad over the previous line's tail, which \r alone leaves standing.
      write(`\r${line.padEnd(width)}`);
      width = line.length;
      drawn = true;
    },
    finish: () => {
      if (drawn) write('\n');
    },
  };
}
