// Releases that are broken, hostile or huge: a broken release nobody needs never blocks the
// others; archives are read within bounds (a decompression bomb fails fast); a local chart never
// reads outside its release; and the CLI stays small in memory whatever the inputs hold.
import { readdirSync } from 'node:fs';
import { cp, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import * as tar from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  copyExampleReleases,
  copyExampleReleasesAsArchives,
  EXAMPLE_MANIFESTS,
  runClusterstack,
  tempDir,
} from '../support/cli.js';
import { removeCliBundle, runCliProcess } from '../support/cli-process.js';
import { type FakeGitHub, startFakeGitHub } from '../support/fake-github/index.js';

const V3 = 'docker-ferrol-1-30-v3';
const V4 = 'docker-ferrol-1-30-v4';

async function render(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stderr: string; report: Record<string, any> }> {
  const result = await runClusterstack(['render', ...args, '--json'], { env });
  return { code: result.code, stderr: result.stderr, report: result.stdout ? JSON.parse(result.stdout) : {} };
}

/** A copy of the quick-start releases plus a newest release v4, made as `make` says. */
async function releasesWithV4(make: (dir: string) => Promise<void>): Promise<string> {
  const releases = await copyExampleReleases();
  const v4 = path.join(releases, V4);
  await mkdir(v4);
  await make(v4);
  return releases;
}

/** v3's files as v4's, with v4's metadata and chart name. */
async function copyOfV3(releases: string, v4: string): Promise<void> {
  await cp(path.join(releases, V3), v4, { recursive: true });
  await rm(path.join(v4, 'docker-ferrol-1-30-cluster-class-v3.tgz'));
  await writeFile(
    path.join(v4, 'metadata.yaml'),
    (await readFile(path.join(releases, V3, 'metadata.yaml'), 'utf8')).replace('clusterStack: v3', 'clusterStack: v4'),
  );
}

let zeros: Buffer | undefined;

/**
 * The CPU a render in this process may spend on a bomb: inflating all of a 16 GiB one would take
 * about 26 CPU-s (zeros inflate at about 650 MB/s here), refusing it 1 MiB past the end of its tar
 * took the whole render 0.6 at most. CPU, not wall time: a loaded machine stretches the wall, not the work.
 */
const BOMB_RENDER_CPU_SECONDS = 4;

/** What `run` resolves to, and the CPU-seconds this process spent meanwhile (the CLI runs in-process). */
async function withCpuSeconds<T>(run: () => Promise<T>): Promise<[T, number]> {
  const before = process.cpuUsage();
  const result = await run();
  const spent = process.cpuUsage(before);
  return [result, (spent.user + spent.system) / 1e6];
}

/** A .tgz whose gzip stream goes on with `gib` GiB of zeros after the end of a real chart's tar. */
async function zeroBomb(file: string, chartTgz: string, gib: number): Promise<void> {
  const staging = await tempDir('csk-bomb-');
  await tar.x({ file: chartTgz, cwd: staging });
  const chartTar = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    tar
      .c({ cwd: staging, portable: true }, readdirSync(staging))
      .on('data', (chunk: Buffer) => chunks.push(chunk))
      .on('end', () => resolve(Buffer.concat(chunks)))
      .on('error', reject);
  });
  // gzip members concatenate into one stream: 64 MiB of zeros compresses to ~64 KiB, reused.
  zeros ??= gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 1 });
  await writeFile(file, Buffer.concat([gzipSync(chartTar), ...Array.from({ length: gib * 16 }, () => zeros!)]));
}

describe('a broken release nobody needs never blocks the others', () => {
  it.each([
    ['an empty directory', async (_v4: string) => {}, /has no metadata\.yaml/],
    [
      'a truncated cluster-class archive',
      async (v4: string) => {
        const releases = path.dirname(v4);
        await copyOfV3(releases, v4);
        const whole = await readFile(path.join(releases, V3, 'docker-ferrol-1-30-cluster-class-v3.tgz'));
        await writeFile(
          path.join(v4, 'docker-ferrol-1-30-cluster-class-v4.tgz'),
          whole.subarray(0, Math.floor(whole.length / 2)),
        );
      },
      /cannot be read as a tar archive/,
    ],
  ])('skips a newest release that is %s, with a warning, and renders v3 as the newest', async (_name, make, reason) => {
    const releases = await releasesWithV4(make);
    const out = path.join(await tempDir(), 'out');
    const result = await render([EXAMPLE_MANIFESTS, '--release-source', releases, '--output', out]);
    expect(result.code).toBe(0);
    const warning = result.report.warnings.find((message: string) => message.includes(V4));
    expect(warning).toMatch(
      /ClusterStack cluster-stacks\/docker-ferrol-1-30: release docker-ferrol-1-30-v4 cannot be loaded and is skipped/,
    );
    expect(warning).toMatch(reason);
    expect(result.report.files.written).toContain(`management/cluster-stacks/${V3}/clusterclass-${V3}.yaml`);
    expect(result.report.files.written.some((file: string) => file.includes(V4))).toBe(false);
  });

  it('skips a newest release whose archive is a decompression bomb, fast', async () => {
    const releases = await releasesWithV4(async (v4) => {
      await copyOfV3(path.dirname(v4), v4);
      await zeroBomb(
        path.join(v4, 'docker-ferrol-1-30-cluster-class-v4.tgz'),
        path.join(path.dirname(v4), V3, 'docker-ferrol-1-30-cluster-class-v3.tgz'),
        16,
      );
    });
    const [out, cache] = [path.join(await tempDir(), 'out'), await tempDir()];
    const [result, cpuSeconds] = await withCpuSeconds(() =>
      render([EXAMPLE_MANIFESTS, '--release-source', releases, '--output', out, '--cache-dir', cache]),
    );
    expect(cpuSeconds).toBeLessThan(BOMB_RENDER_CPU_SECONDS);
    expect(result.code).toBe(0);
    expect(result.report.warnings.join('\n')).toMatch(
      /docker-ferrol-1-30-v4 cannot be loaded and is skipped .*goes on with more than 1048576 bytes after the end of its tar archive/,
    );
  });

  it('still refuses a broken release that spec.versions pins, writing nothing', async () => {
    const releases = await releasesWithV4(async () => {});
    const pinned = await tempDir('csk-pinned-');
    await cp(EXAMPLE_MANIFESTS, pinned, { recursive: true });
    await writeFile(
      path.join(pinned, 'clusterstack.yaml'),
      (await readFile(path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml'), 'utf8')).replace('- v2', '- v2\n    - v4'),
    );
    const out = path.join(await tempDir(), 'out');
    const result = await render([pinned, '--release-source', releases, '--output', out]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/docker-ferrol-1-30-v4: has no metadata\.yaml/);
    await expect(readFile(path.join(out, 'current', 'README.md'))).rejects.toThrow();
  });

  it('refuses a used release whose archive is a bomb, on a fraction of its cost, naming it', async () => {
    const releases = await copyExampleReleases();
    const chart = path.join(releases, V3, 'docker-ferrol-1-30-cluster-class-v3.tgz');
    const original = path.join(await tempDir(), 'v3.tgz');
    await cp(chart, original);
    await zeroBomb(chart, original, 16);
    const [out, cache] = [path.join(await tempDir(), 'out'), await tempDir()];
    const [result, cpuSeconds] = await withCpuSeconds(() =>
      render([EXAMPLE_MANIFESTS, '--release-source', releases, '--output', out, '--cache-dir', cache]),
    );
    expect(cpuSeconds).toBeLessThan(BOMB_RENDER_CPU_SECONDS);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /archive docker-ferrol-1-30-v3\/docker-ferrol-1-30-cluster-class-v3\.tgz: goes on with more than 1048576 bytes after the end of its tar archive/,
    );
  });
});

describe('a half-uploaded GitHub release', () => {
  let github: FakeGitHub;
  beforeAll(async () => {
    github = await startFakeGitHub();
    await github.addReleasesFromDirectory('example', 'stacks', await copyExampleReleasesAsArchives());
    // Only some of its assets made it: no metadata.yaml.
    github.addRelease('example', 'stacks', {
      tag: V4,
      assets: [{ name: 'docker-ferrol-1-30-cluster-class-v4.tgz', content: Buffer.from('partial') }],
    });
  });
  afterAll(() => github.close());

  it('is skipped with a warning; the others render', async () => {
    const result = await render([
      EXAMPLE_MANIFESTS,
      '--release-source',
      'github:example/stacks',
      '--github-api-url',
      github.apiUrl,
      '--output',
      path.join(await tempDir(), 'out'),
      '--cache-dir',
      await tempDir(),
    ]);
    expect(result.code).toBe(0);
    expect(result.report.warnings.join('\n')).toMatch(
      /release docker-ferrol-1-30-v4 cannot be loaded and is skipped \(.*has no metadata\.yaml asset\)/,
    );
    expect(result.report.files.written).toContain(`management/cluster-stacks/${V3}/clusterclass-${V3}.yaml`);
  });
});

describe('local chart directories', () => {
  it('refuse a symbolic link out of the release, naming it, and write nothing', async () => {
    const releases = await copyExampleReleases();
    const v1 = path.join(releases, 'docker-ferrol-1-30-v1');
    await tar.x({ file: path.join(v1, 'docker-ferrol-1-30-cluster-addon-v1.tgz'), cwd: v1 });
    await rm(path.join(v1, 'docker-ferrol-1-30-cluster-addon-v1.tgz'));
    const [chart] = readdirSync(v1).filter((entry) => !entry.includes('.'));
    await cp(path.join(v1, chart!), path.join(v1, 'docker-ferrol-1-30-cluster-addon-v1'), { recursive: true });
    await rm(path.join(v1, chart!), { recursive: true, force: true });
    await symlink('/etc/hostname', path.join(v1, 'docker-ferrol-1-30-cluster-addon-v1', 'templates', 'leak.yaml'));
    const out = path.join(await tempDir(), 'out');
    const result = await render([EXAMPLE_MANIFESTS, '--release-source', releases, '--output', out]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /docker-ferrol-1-30-v1\/docker-ferrol-1-30-cluster-addon-v1\/templates\/leak\.yaml: is a symbolic link to \/etc\/hostname, outside the release/,
    );
    await expect(readFile(path.join(out, 'current', 'README.md'))).rejects.toThrow();
  });
});

describe('memory', () => {
  afterAll(() => removeCliBundle());
  // The CLI process's own peak (helm runs in processes of its own), read from inside it at exit.
  const PEAK = `data:text/javascript,process.on('exit',()=>process.stderr.write('\\npeak-rss-kib='+process.resourceUsage().maxRSS+'\\n'))`;
  function peakMiB(stderr: string): number {
    const match = /peak-rss-kib=(\d+)/.exec(stderr);
    expect(match).not.toBeNull();
    return Number(match![1]) / 1024;
  }

  it('renders the quick start under 200 MiB with junk beside the inputs and a bomb among the releases', async () => {
    const inputs = await tempDir('csk-junk-');
    await cp(EXAMPLE_MANIFESTS, inputs, { recursive: true });
    // Just under the per-file limit: a kind the render ignores, with one huge value.
    await writeFile(
      path.join(inputs, 'junk.yaml'),
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: junk, namespace: default}\ndata:\n  blob: "${'x'.repeat(7 * 1024 * 1024)}"\n`,
    );
    await symlink('/dev/zero', path.join(inputs, 'zero.txt'));
    const releases = await releasesWithV4(async (v4) => {
      await copyOfV3(path.dirname(v4), v4);
      await zeroBomb(
        path.join(v4, 'docker-ferrol-1-30-cluster-class-v4.tgz'),
        path.join(path.dirname(v4), V3, 'docker-ferrol-1-30-cluster-class-v3.tgz'),
        4,
      );
    });
    const result = await runCliProcess(
      [
        'render',
        inputs,
        '--release-source',
        releases,
        '--output',
        path.join(await tempDir(), 'out'),
        '--cache-dir',
        await tempDir(),
      ],
      {
        nodeArgs: ['--import', PEAK],
      },
    );
    expect(result.code).toBe(0);
    const peak = peakMiB(result.stderr);
    console.info(`render of the quick start with junk inputs and a bomb release: peak RSS ${peak.toFixed(0)} MiB`);
    expect(peak).toBeLessThan(200);
  });
});
