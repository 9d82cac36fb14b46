// The CLI's start-up (issue 18): `--help` and `plan` print where their time went under
// CLUSTERSTACK_TIMINGS=1 (and nothing without it), `plan` on the quick start loads none of the
// packages only other commands need, and plan's ClusterClass renders are kept across runs without
// ever hiding a changed chart. Speed itself is measured by `npm run bench -- --only startup`; these
// tests assert behaviour only and print the times they saw.
import { execFile } from 'node:child_process';
import { copyFile, cp, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clusterYaml,
  EXAMPLE_MANIFESTS,
  EXAMPLE_RELEASES,
  FERROL_STACK_YAML,
  runClusterstack,
  tempDir,
  writeTree,
} from './support/cli.js';
import { cliEnvironment, REPO_ROOT, removeCliBundle, runCliProcess } from './support/cli-process.js';
import {
  buildOrcReleases,
  ORC_IMAGE_NAME,
  ORC_PREFIX,
  orcClusterStack,
  orcRelease,
} from './support/orc-stack-releases.js';
import { transpileSources } from './support/transpiled-sources.js';

// Inside the repository, so that the transpiled modules' imports resolve from node_modules.
// Which packages a command loads is seen from these, module for module as the published package
// has them: the test bundle inlines @kubernetes/client-node (support/cli-bundle.ts).
const SOURCES_DIR = path.join(REPO_ROOT, 'node_modules', '.cache', `clusterstack-sources-${process.pid}`);
let transpiled: Promise<string> | undefined;
/** src/cli/main.js of the sources transpiled file for file, made once per file. */
function sourcesMain(): Promise<string> {
  transpiled ??= transpileSources(REPO_ROOT, SOURCES_DIR).then(() => path.join(SOURCES_DIR, 'src/cli/main.js'));
  return transpiled;
}
afterAll(async () => {
  await removeCliBundle();
  await rm(SOURCES_DIR, { recursive: true, force: true });
});

const execFileAsync = promisify(execFile);

/**
 * Node `--import` and `--require` modules that record into `log` the URL of every module the
 * process loads: ES modules through a load hook, and what `require` loads (including an ES module
 * required from CommonJS, which the hook does not see) through Module._load.
 */
async function moduleRecorder(): Promise<{ nodeArgs: string[]; loaded: () => Promise<string[]> }> {
  const dir = await tempDir('csk-module-recorder-');
  const log = path.join(dir, 'loaded.txt');
  const hooks = path.join(dir, 'hooks.mjs');
  await writeFile(
    hooks,
    `import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) { appendFileSync(${JSON.stringify(log)}, url + '\\n'); return next(url, context); }\n`,
  );
  const register = path.join(dir, 'register.mjs');
  await writeFile(
    register,
    `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
  );
  const requires = path.join(dir, 'requires.cjs');
  await writeFile(
    requires,
    `const Module = require('node:module');\nconst { appendFileSync } = require('node:fs');\nconst load = Module._load;\n` +
      `Module._load = function (request, parent, isMain) { try { appendFileSync(${JSON.stringify(log)}, 'file://' + Module._resolveFilename(request, parent, isMain) + '\\n'); } catch {} return load.apply(this, arguments); };\n`,
  );
  await writeFile(log, '');
  return {
    nodeArgs: ['--require', requires, '--import', register],
    loaded: async () => (await readFile(log, 'utf8')).split('\n').filter(Boolean),
  };
}

/** Runs the CLI from the transpiled sources (sourcesMain) to its end, whatever its exit code. */
async function runSources(
  args: string[],
  options: { nodeArgs?: string[]; env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const command = [...(options.nodeArgs ?? []), await sourcesMain(), ...args];
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, command, {
      cwd: REPO_ROOT,
      env: cliEnvironment(options.env),
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** The packages (node_modules/<name>) among loaded module URLs. */
function packagesOf(urls: string[]): Set<string> {
  return new Set(urls.flatMap((url) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1] ?? []));
}

/** The phases of the timings line on stderr, ms each. */
function timings(stderr: string): Map<string, number> {
  const line = stderr.split('\n').find((text) => text.startsWith('timings: '));
  expect(line, `a timings line on stderr:\n${stderr}`).toBeDefined();
  return new Map([...line!.matchAll(/([\w-]+)=(\d+)ms/g)].map((match) => [match[1]!, Number(match[2])]));
}

describe('clusterstack start-up', () => {
  it('--help and plan on the quick start print their start-up time under CLUSTERSTACK_TIMINGS=1, and nothing without it', async () => {
    const cache = await tempDir('csk-startup-cache-');
    const help = await runCliProcess(['--help'], { env: { CLUSTERSTACK_TIMINGS: '1' } });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: clusterstack <command>');
    const helpTimes = timings(help.stderr);
    expect([...helpTimes.keys()]).toEqual(['node', 'total']);

    const planArgs = ['plan', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--json'];
    const plan = await runCliProcess(planArgs, { env: { CLUSTERSTACK_TIMINGS: '1', CLUSTERSTACK_CACHE_DIR: cache } });
    expect(plan.code).toBe(0);
    expect(JSON.parse(plan.stdout).clusterStacks[0].name).toBe('docker-ferrol-1-30');
    const planTimes = timings(plan.stderr);
    expect([...planTimes.keys()]).toEqual([
      'node',
      'modules',
      'start-up',
      'inputs-and-releases',
      'render-check',
      'report',
      'total',
    ]);
    // start-up is what came before the command's own work: node's start and loading its modules.
    expect(
      Math.abs(planTimes.get('start-up')! - planTimes.get('node')! - planTimes.get('modules')!),
    ).toBeLessThanOrEqual(1);
    expect(planTimes.get('start-up')!).toBeLessThanOrEqual(planTimes.get('total')!);
    expect(plan.stderr).toMatch(/render-check=\d+ms \(3 charts, 0 from cache; 7 values templates, 0 from cache\)/);
    console.log(
      `start-up (this machine, under test load): --help ${helpTimes.get('total')} ms in all; plan ${planTimes.get('start-up')} ms until its own work, ${planTimes.get('total')} ms in all`,
    );

    // Without the variable a --json run says nothing on stderr.
    const quiet = await runCliProcess(planArgs, { env: { CLUSTERSTACK_CACHE_DIR: cache } });
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe('');
    expect(quiet.stdout).toBe(plan.stdout);
  });

  it('render prints its own phases under CLUSTERSTACK_TIMINGS=1: loading the pipeline, reading the previous output, rendering with its helm processes, publishing', async () => {
    const env = { CLUSTERSTACK_TIMINGS: '1', CLUSTERSTACK_CACHE_DIR: await tempDir('csk-startup-cache-') };
    // The example stack with clusters that all render (the quick start withholds one on purpose, which keeps its runs from settling).
    const inputs = await writeTree({
      'fleet.yaml': `${FERROL_STACK_YAML}${clusterYaml('alpha', 'docker-ferrol-1-30-v1')}${clusterYaml('bravo', 'docker-ferrol-1-30-v1')}`,
    });
    const args = [
      'render',
      inputs,
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      path.join(await tempDir('csk-startup-out-'), 'out'),
      '--json',
    ];
    const full = await runCliProcess(args, { env });
    expect(full.code, full.stderr).toBe(0);
    const report = JSON.parse(full.stdout) as { helmProcesses: number; changed: boolean };
    expect(report.changed).toBe(true);
    const times = timings(full.stderr);
    expect([...times.keys()]).toEqual([
      'node',
      'modules',
      'start-up',
      'inputs-and-releases',
      'render-modules',
      'read-previous',
      'render',
      'publish',
      'total',
    ]);
    expect(full.stderr).toContain(`render=${times.get('render')}ms (${report.helmProcesses} helm processes)`);
    const phases = ['start-up', 'inputs-and-releases', 'render-modules', 'read-previous', 'render', 'publish'].reduce(
      (sum, phase) => sum + times.get(phase)!,
      0,
    );
    expect(phases).toBeLessThanOrEqual(times.get('total')!);
    console.log(`render of the example stack (this machine, under test load): ${full.stderr.trim()}`);

    // A settled run renders nothing: no render or publish phase is claimed.
    const again = await runCliProcess(args, { env });
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toHaveProperty('noop');
    expect([...timings(again.stderr).keys()]).toEqual(['node', 'modules', 'start-up', 'inputs-and-releases', 'total']);

    // Nor does it load the pipeline, or our adapters for remote sources and other outputs. Run from
    // the sources transpiled file for file (the bundle's chunks have no module names to see), which
    // are other code than the bundle: the first such run renders again (reusing every unit), the
    // second is settled.
    const recorder = await moduleRecorder();
    const fromSources = async (nodeArgs: string[] = []): Promise<string> => {
      const run = await runSources(args, { nodeArgs, env });
      expect(run.code, run.stderr).toBe(0);
      return run.stdout;
    };
    await fromSources();
    expect(JSON.parse(await fromSources(recorder.nodeArgs))).toHaveProperty('noop');
    const loaded = (await recorder.loaded()).map((url) => path.basename(url).replace(/\.[jt]s$/, ''));
    expect(loaded).toContain('directory-publisher');
    for (const unneeded of [
      'render-and-publish',
      'helm-runner',
      'oci-artifact-publisher',
      'reproducible-tar',
      'registry-client',
      'oci-layout-source',
      'oci-release-source',
      'github-release-source',
      'git-publisher',
    ]) {
      expect(loaded, `a settled render loaded ${unneeded}`).not.toContain(unneeded);
    }
  });

  it('a second plan of unchanged releases and inputs does not load the CEL library (wait-condition syntax and CRD rule verdicts remembered), and still warns about an invalid wait condition', async () => {
    const releases = path.join(await tempDir('csk-startup-releases-'), 'releases');
    await cp(EXAMPLE_RELEASES, releases, { recursive: true });
    const config = path.join(releases, 'docker-ferrol-1-30-v2', 'clusteraddon.yaml');
    await writeFile(
      config,
      (await readFile(config, 'utf8')).replace('kindnet.status.numberReady > 0 &&', 'kindnet.status.numberReady > &&'),
    );
    const env = { CLUSTERSTACK_CACHE_DIR: await tempDir('csk-startup-cache-') };
    const runs = [];
    for (let run = 0; run < 2; run += 1) {
      const recorder = await moduleRecorder();
      const result = await runCliProcess(['plan', EXAMPLE_MANIFESTS, '--release-source', releases, '--json'], {
        nodeArgs: recorder.nodeArgs,
        env,
      });
      expect(result.code, result.stderr).toBe(0);
      runs.push({ stdout: result.stdout, cel: packagesOf(await recorder.loaded()).has('@marcbachmann/cel-js') });
    }
    expect(runs.map((run) => run.cel)).toEqual([true, false]);
    for (const run of runs) expect(run.stdout).toMatch(/waitForPostCondition\.conditions.*is not valid CEL/);
    expect(runs[1]!.stdout).toBe(runs[0]!.stdout);
  });

  it("plan on the quick start loads none of the packages only publishing, Git, GitHub, encryption or the controller need; nor do the controller's help and flag errors", async () => {
    const recorder = await moduleRecorder();
    const result = await runSources(['plan', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--json'], {
      nodeArgs: recorder.nodeArgs,
      env: { CLUSTERSTACK_CACHE_DIR: await tempDir('csk-startup-cache-') },
    });
    expect(result.code, result.stderr).toBe(0);
    const packages = packagesOf(await recorder.loaded());
    // What plan does need was recorded: the recorder works.
    expect(packages.has('js-yaml')).toBe(true);
    for (const heavy of [
      '@octokit/request',
      'handlebars',
      'age-encryption',
      '@kubernetes/client-node',
      'undici',
      'pino',
      'prom-client',
    ]) {
      expect(packages.has(heavy), `plan loaded ${heavy}`).toBe(false);
    }
    // render still loads what it needs on demand (its help loads the command).
    const renderHelp = await runCliProcess(['render', '--help']);
    expect(renderHelp.code).toBe(0);
    expect(renderHelp.stdout).toContain('Usage: clusterstack render');

    // The controller's help, and a controller whose flags are wrong, answer before its runtime loads
    // (the Kubernetes client, the logger, the metrics); the command itself was recorded.
    const usage = ['controller', '--release-source', EXAMPLE_RELEASES, '--output', 'out', '--log-level', 'loud'];
    for (const [args, code, says] of [
      [['controller', '--help'], 0, 'Usage: clusterstack controller'],
      [usage, 2, '--log-level must be debug, info, warn or error, not "loud"'],
    ] as const) {
      const controllerRecorder = await moduleRecorder();
      const run = await runSources([...args], { nodeArgs: controllerRecorder.nodeArgs });
      expect(run.code, run.stderr).toBe(code);
      expect(run.stdout + run.stderr).toContain(says);
      const loaded = await controllerRecorder.loaded();
      expect(loaded.some((url) => url.endsWith('/controller-command.js'))).toBe(true);
      const loadedPackages = packagesOf(loaded);
      for (const heavy of ['@kubernetes/client-node', 'pino', 'prom-client'])
        expect(loadedPackages.has(heavy), `${args.join(' ')} loaded ${heavy}`).toBe(false);
    }
  });
});

describe('plan keeps its ClusterClass renders across runs', () => {
  let releases: string;

  beforeAll(async () => {
    releases = await buildOrcReleases();
  });

  it('an unchanged plan renders nothing again and says the same; a changed chart renders again and its conflict shows', async () => {
    const inputs = await writeTree({ 'stack.yaml': orcClusterStack(['v1', 'v2']) });
    const env = { CLUSTERSTACK_CACHE_DIR: await tempDir('csk-plan-cache-'), CLUSTERSTACK_TIMINGS: '1' };
    const plan = (): ReturnType<typeof runClusterstack> =>
      runClusterstack(['plan', inputs, '--release-source', releases, '--json'], { env });

    const first = await plan();
    expect(first.code).toBe(0);
    expect(first.stderr).toMatch(/render-check=\d+ms \(2 charts, 0 from cache; 0 values templates, 0 from cache\)/);
    const firstReport = JSON.parse(first.stdout);
    expect(firstReport.clusterStacks[0].notes.filter((note: string) => note.includes('will be withheld'))).toEqual([]);

    const second = await plan();
    expect(second.stderr).toMatch(/render-check=\d+ms \(2 charts, 2 from cache;/);
    expect(JSON.parse(second.stdout)).toEqual(firstReport);

    // v2's ClusterClass chart is replaced by one rendering the node image with other content: its
    // digest changes, so it renders again (v1's stays cached) and the conflict is reported.
    const v2Chart = path.join(releases, orcRelease('v2'), `${ORC_PREFIX}-cluster-class-v2.tgz`);
    await copyFile(path.join(releases, orcRelease('v3'), `${ORC_PREFIX}-cluster-class-v3.tgz`), v2Chart);
    const changed = await plan();
    expect(changed.code).toBe(0);
    expect(changed.stderr).toMatch(/render-check=\d+ms \(2 charts, 1 from cache;/);
    expect(
      JSON.parse(changed.stdout).clusterStacks[0].notes.filter((note: string) => note.includes('will be withheld')),
    ).toEqual([
      expect.stringContaining(
        `release ${orcRelease('v2')} will be withheld: it renders Image.openstack.k-orc.cloud fleet/${ORC_IMAGE_NAME} unlike the older release ${orcRelease('v1')}`,
      ),
    ]);
  });

  it("cache size counts those renders and cache prune keeps only the kept releases' (for the helm plan uses)", async () => {
    const env = { CLUSTERSTACK_CACHE_DIR: await tempDir('csk-plan-cache-'), CLUSTERSTACK_TIMINGS: '1' };
    const both = await writeTree({ 'stack.yaml': orcClusterStack(['v1', 'v3']) });
    expect((await runClusterstack(['plan', both, '--release-source', releases, '--json'], { env })).stderr).toMatch(
      /\(2 charts, 0 from cache;/,
    );
    const size = async (): Promise<{ entries: number; bytes: number }> =>
      JSON.parse(
        (
          await runClusterstack(['cache', 'size', '--json'], {
            env: { CLUSTERSTACK_CACHE_DIR: env.CLUSTERSTACK_CACHE_DIR },
          })
        ).stdout,
      ).chartRenders;
    expect((await size()).entries).toBe(2);
    expect((await size()).bytes).toBeGreaterThan(0);

    const onlyV1 = await writeTree({ 'stack.yaml': orcClusterStack(['v1']) });
    const pruned = await runClusterstack(['cache', 'prune', onlyV1, '--release-source', releases, '--json'], {
      env: { CLUSTERSTACK_CACHE_DIR: env.CLUSTERSTACK_CACHE_DIR },
    });
    expect(pruned.code).toBe(0);
    expect(JSON.parse(pruned.stdout).removedChartRenders).toBe(1);
    expect((await size()).entries).toBe(1);
    // v1's render stayed: the next plan of both renders only v3.
    expect((await runClusterstack(['plan', both, '--release-source', releases, '--json'], { env })).stderr).toMatch(
      /\(2 charts, 1 from cache;/,
    );
  });

  it('without a usable helm what render would withhold is not checked: a warning, and the plan stands', async () => {
    const env = {
      CLUSTERSTACK_CACHE_DIR: await tempDir('csk-plan-cache-'),
      CLUSTERSTACK_TIMINGS: '1',
      CLUSTERSTACK_HELM: '/does/not/exist/helm',
    };
    const two = await runClusterstack(
      ['plan', await writeTree({ 'stack.yaml': orcClusterStack(['v1', 'v2']) }), '--release-source', releases],
      { env },
    );
    expect(two.code).toBe(0);
    expect(two.stderr).toContain(
      'warning: what render would withhold was not checked: helm not found at /does/not/exist/helm',
    );
    expect(two.stderr).toMatch(/render-check=\d+ms \(not checked\)/);
    expect(two.stdout).toContain(orcRelease('v2'));
    expect(two.stdout).not.toContain('A render would withhold');
  });
});
