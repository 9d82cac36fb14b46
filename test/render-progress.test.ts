import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { formatDuration, progressLine, terminalProgress } from '../src/cli/render-progress.js';
import type { RenderProgress } from '../src/render/render-output.js';
import { EXAMPLE_MANIFESTS, EXAMPLE_RELEASES, runClusterstack, tempDir } from './support/cli.js';

const at = (done: number, rendered: number, total = 10): RenderProgress => ({
  releasesDone: 1,
  releasesTotal: 2,
  clustersDone: 3,
  clustersTotal: 4,
  unitsDone: done,
  unitsTotal: total,
  unitsRendered: rendered,
});

describe('progressLine', () => {
  it('shows units done of all, releases and clusters, and the time left from the pace of rendered units', () => {
    // 4 units rendered in 8 s: 2 s each, 6 left.
    expect(progressLine(at(4, 4), 8000)).toBe('rendering: 4/10 units (releases 1/2, clusters 3/4), about 12s left');
    // Reused units finish at once: they do not count toward the pace.
    expect(progressLine(at(6, 2), 4000)).toBe('rendering: 6/10 units (releases 1/2, clusters 3/4), about 8s left');
    expect(progressLine(at(3, 0), 10)).toBe('rendering: 3/10 units (releases 1/2, clusters 3/4), estimating time left');
    expect(progressLine(at(10, 7), 9000)).toBe('rendering: 10/10 units (releases 1/2, clusters 3/4), done');
  });

  it('writes durations in minutes and seconds', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(59_400)).toBe('59s');
    expect(formatDuration(65_000)).toBe('1m05s');
  });
});

describe('terminalProgress', () => {
  it('redraws at most ten times a second, always draws the last unit, and ends the line', () => {
    let clock = 0;
    let written = '';
    const progress = terminalProgress(
      (text) => (written += text),
      () => clock,
    );
    progress.onProgress(at(1, 1));
    clock = 50;
    progress.onProgress(at(2, 2));
    clock = 120;
    progress.onProgress(at(3, 3));
    clock = 130;
    progress.onProgress(at(10, 10));
    progress.finish();
    const lines = written.split('\r').filter(Boolean);
    expect(lines.map((line) => line.trimEnd().split(' ')[1])).toEqual(['1/10', '3/10', '10/10']);
    expect(written.endsWith('\n')).toBe(true);
  });
});

describe('render progress on the command line', () => {
  it('draws progress on a terminal, and keeps stderr silent with --json', async () => {
    const tty = await runClusterstack(
      [
        'render',
        EXAMPLE_MANIFESTS,
        '--release-source',
        EXAMPLE_RELEASES,
        '--output',
        path.join(await tempDir(), 'out'),
      ],
      { isTty: true },
    );
    expect(tty.code).toBe(0);
    expect(tty.stderr).toMatch(/\rrendering: (\d+)\/\1 units \(releases 3\/3, clusters 4\/4\), done\s*\n$/);

    const json = await runClusterstack(
      [
        'render',
        EXAMPLE_MANIFESTS,
        '--release-source',
        EXAMPLE_RELEASES,
        '--output',
        path.join(await tempDir(), 'out'),
        '--json',
      ],
      { isTty: true },
    );
    expect(json.code).toBe(0);
    expect(json.stderr).toBe('');
    expect(JSON.parse(json.stdout)).toMatchObject({ changed: true });
  });
});
