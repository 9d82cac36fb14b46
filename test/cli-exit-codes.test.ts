// The exit code for each kind of failure, decided in one place from the table in core/failure.ts:
// a command (here `releases`, replaced in this process by one that throws what a test hands it)
// raises an error, and run-cli says what it means and which code ends the run. Then each row of the
// README's table through the real CLI, in processes of its own.
import { execFile } from 'node:child_process';
import { chmod, readdir, stat } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { EXIT_CODES, Failure, FAILURE_REACTIONS } from '../src/core/failure.js';
import { InputError } from '../src/core/problem.js';
import { ConfigError } from '../src/config.js';
import { RemoteFailureError, UsageError } from '../src/cli/cli-io.js';
import { HelmNotFoundError, HelmRenderError, HelmTimeoutError } from '../renderers/helm-errors.js';
import { ValuesTemplateError } from '../renderers/values-template.js';
import { SecretRefusedError } from '../src/render/secret-policy.js';
import { TemplateError } from '../src/render/sandboxed-template.js';
import { UnsafeArchiveError } from '../src/release/safe-extract.js';
import { ReleaseSourceError } from '../src/release/release-source.js';
import { DeadlineExceededError } from '../src/http/remote-deadline.js';
import { RequestTimeoutError } from '../src/http/http-retry.js';
import { YamlDecodeError } from '../src/yaml/kube-yaml.js';
import { TagSyntaxError } from '../src/core/release-tag.js';
import { VersionSyntaxError } from '../src/core/stack-version.js';
import { PublishError } from '../gitops/publish-error.js';
import { LockHeldError } from '../gitops/publish-lock.js';
import type { KubeObject } from '../src/api/types.js';
import {
  type CliResult,
  clusterYaml,
  EXAMPLE_MANIFESTS,
  EXAMPLE_RELEASES,
  FERROL_STACK_YAML,
  runClusterstack,
  tempDir,
  writeTree,
} from './support/cli.js';
import {
  cliCommand,
  cliEnvironment,
  type CliProcessOptions,
  type ProcessResult,
  removeCliBundle,
  runCliProcess,
} from './support/cli-process.js';

const failing = vi.hoisted(() => ({ error: undefined as unknown }));

// The command throws what a test of the first block hands it; with nothing handed, it is the real one.
vi.mock('../src/cli/releases-command.js', async (original) => {
  const real = await original<typeof import('../src/cli/releases-command.js')>();
  return {
    ...real,
    releasesCommand: async (...args: Parameters<typeof real.releasesCommand>) => {
      if (failing.error === undefined) return real.releasesCommand(...args);
      throw failing.error;
    },
  };
});

async function exitFor(error: unknown): Promise<{ code: number; stderr: string }> {
  failing.error = error;
  try {
    const { code, stderr } = await runClusterstack(['releases', 'list', '--source', 'anything']);
    return { code, stderr };
  } finally {
    failing.error = undefined;
  }
}

const secret = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'token', namespace: 'kube-system' },
} as unknown as KubeObject;

describe('exit codes by kind of failure', () => {
  it('exits 1 for everything a person fixes in the inputs, a chart or the configuration', async () => {
    const fixInput: Error[] = [
      new InputError([{ message: 'spec.provider: is required' }]),
      // The mass-deletion refusal is an InputError too (render-command throws it so).
      new InputError(
        [{ message: 'refused: the render removes every cluster' }],
        'refused: the render removes every cluster',
      ),
      new HelmRenderError('docker-ferrol-1-30-v1', 'cluster-class', 'template: bad'),
      new HelmNotFoundError('helm not found: install it'),
      // A template that never ends loops again on a retry: the chart or values template needs a fix.
      new HelmTimeoutError('rendering cluster-class', 60_000),
      new SecretRefusedError('cluster alpha', [{ object: secret, why: 'is a Secret' }]),
      new UnsafeArchiveError('release.tgz', '../etc/passwd', 'leaves the directory'),
      new ValuesTemplateError('overwrite.yaml', 'TemplateError', 'unclosed action', 2),
      new TemplateError('--commit-template', 'Parse error'),
      new YamlDecodeError('bad indentation', 3),
      new TagSyntaxError('docker-x', 'too short'),
      new VersionSyntaxError('v1-x', 'not a version'),
      new ReleaseSourceError('not-found', 'no such repository'),
      new PublishError('auth', 'the remote refused the token'),
    ];
    for (const error of fixInput) {
      const result = await exitFor(error);
      expect(result.code, error.name).toBe(FAILURE_REACTIONS['fix-input'].exitCode);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(`error: ${error.message}\n`);
    }
  });

  it('exits 3 for what may work when tried again later', async () => {
    const retry: Error[] = [
      new RemoteFailureError('a release source failed; retry later'),
      new RequestTimeoutError('https://registry.example/v2/', 30_000),
      new DeadlineExceededError('listing releases', 300_000),
      new ReleaseSourceError('rate-limited', 'GitHub rate limit'),
      new PublishError('unavailable', 'the remote did not answer'),
      new LockHeldError('another run holds the lock'),
    ];
    for (const error of retry) {
      const result = await exitFor(error);
      expect(result.code, error.name).toBe(FAILURE_REACTIONS.retry.exitCode);
      expect(result.code).toBe(3);
      expect(result.stderr).toBe(`error: ${error.message}\n`);
    }
  });

  it('exits 2 for a wrong command line or setting, with a hint to --help', async () => {
    for (const error of [
      new UsageError('releases list needs --source'),
      new ConfigError('--read-timeout must be a duration'),
    ]) {
      const result = await exitFor(error);
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        `error: ${error.message}\nRun 'clusterstack releases --help' for its options and examples.\n`,
      );
    }
  });

  it('exits 4 for an error of no known kind, saying it is a bug to report', async () => {
    for (const error of [
      new TypeError("Cannot read properties of undefined (reading 'spec')"),
      'a thrown string',
      new Failure('internal', 'an invariant broke'),
    ]) {
      const result = await exitFor(error);
      expect(result.code).toBe(FAILURE_REACTIONS.internal.exitCode);
      expect(result.code).toBe(4);
      expect(result.stderr).toContain(`error: ${error instanceof Error ? error.message : error}\n`);
      expect(result.stderr).toContain('This is a bug in clusterstack');
      expect(result.stderr).toContain('please report it');
    }
    // The stack goes with it, for the report.
    expect((await exitFor(new TypeError('boom'))).stderr).toMatch(/\n {4}at /);
  });

  it('ends a run that must wait with the code the table gives waiting', async () => {
    const result = await exitFor(new Failure('wait', 'the provider release is not ready yet'));
    expect(result.code).toBe(FAILURE_REACTIONS.wait.exitCode);
    expect(result.stderr).toBe('waiting: the provider release is not ready yet\n');
  });

  it('returns only codes the help and the README document', () => {
    const documented = new Set(EXIT_CODES.map((entry) => entry.code));
    for (const reaction of Object.values(FAILURE_REACTIONS)) expect(documented.has(reaction.exitCode)).toBe(true);
    expect(documented.has(2)).toBe(true);
  });
});

// One case per row of the README's exit-code table, each through the real CLI in its own process
// (the bundled src/cli/main.ts: no module above is mocked there), with the message it prints and,
// for render, nothing written. Row 2's many flag values take one process; the rest of them run in
// this process, where the same runCli decides code and message (the mock above is then the real
// releases command): the process adds only main.ts passing runCli's code on, which every row shows.
describe('the real CLI ends with the code of each row of the exit-code table', () => {
  afterAll(async () => {
    await removeCliBundle();
  });

  const plan = (args: string[], options: CliProcessOptions = {}): Promise<ProcessResult> =>
    runCliProcess(['plan', EXAMPLE_MANIFESTS, ...args], options);

  /** A render that must fail before writing anything (in a process, or in this one): the output directory is never created. */
  async function refusedRender(
    args: string[],
    env: NodeJS.ProcessEnv = {},
    inProcess = false,
  ): Promise<Pick<ProcessResult, 'code' | 'stdout' | 'stderr'>> {
    const out = path.join(await tempDir(), 'out');
    const argv = ['render', EXAMPLE_MANIFESTS, '--output', out, ...args];
    const result = inProcess
      ? await runClusterstack(argv, { env: cliEnvironment(env) })
      : await runCliProcess(argv, { env });
    await expect(stat(out)).rejects.toThrow();
    return result;
  }

  it('0: done, the quick start planned', async () => {
    const result = await plan(['--release-source', EXAMPLE_RELEASES]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/cluster-stacks\/alpha\s+docker-ferrol-1-30-v1/);
  });

  it('1: an input needs a fix, named with its file, line, object and field, and nothing is written', async () => {
    const inputs = await writeTree({
      'stack.yaml': FERROL_STACK_YAML,
      'c.yaml': clusterYaml('one', 'docker-ferrol-1-30-v9'),
    });
    const out = path.join(await tempDir(), 'out');
    const result = await runCliProcess(['render', inputs, '--release-source', EXAMPLE_RELEASES, '--output', out]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^error: nothing was rendered or written:\n {2}\S*c\.yaml:8 Cluster cluster-stacks\/one spec\.topology\.class: names docker-ferrol-1-30-v9, but the release source has no release docker-ferrol-1-30-v9; pick a class of an existing release; did you mean docker-ferrol-1-30-v1\?\n\(--allow-partial publishes everything else and keeps the previous output of the Clusters named here\)\n$/,
    );
    expect(result.stderr).not.toMatch(/\n {4}at /);
    await expect(stat(out)).rejects.toThrow();
  });

  it('1: a removed working directory, for every command that reads paths; help and version still work', async () => {
    const inGone = async (args: string[]): Promise<ProcessResult> => {
      // A shell enters a directory of its own, removes it, and starts the CLI from there.
      const gone = await tempDir('csk-gone-');
      const { command, args: argv } = await cliCommand(args);
      const script = `cd "$1" && rmdir "$1" && shift && exec "$@"`;
      return new Promise((resolve, reject) => {
        execFile(
          '/bin/sh',
          ['-c', script, 'sh', gone, command, ...argv],
          { env: cliEnvironment() },
          (error, stdout, stderr) => {
            const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
            if (error && code === null) reject(error);
            else resolve({ code, signal: null, stdout, stderr });
          },
        );
      });
    };
    const commands = [
      ['plan', 'manifests', '--release-source', 'releases'],
      ['render', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--output', 'out'],
      ['releases', 'list', '--source', 'releases'],
      ['cache', 'prune', 'manifests', '--release-source', 'releases'],
      ['controller', '--release-source', 'releases', '--output', 'out'],
    ];
    // Each in its own removed directory, side by side.
    const [version, ...results] = await Promise.all([inGone(['--version']), ...commands.map(inGone)]);
    commands.forEach((args, index) => {
      const result = results[index]!;
      expect(result.stderr, args.join(' ')).toBe(
        'error: the current working directory no longer exists (it was removed or moved away while the shell was in it), so relative paths mean nothing; cd into an existing directory and run the command again\n',
      );
      expect(result.code, args.join(' ')).toBe(1);
    });
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^clusterstack /);
  });

  it('1: a default cache directory this user may not create names it, --cache-dir and the variable', async () => {
    // A home this user may read but not write, as a CI runner's read-only home. Root writes anywhere
    // while it holds CAP_DAC_OVERRIDE: the CLI runs as root without it (and without reading past
    // permissions), so the home's mode applies to it too. Not as another user, who could not read
    // this clone when it lies in a private directory (mktemp -d's).
    const home = await tempDir('csk-read-only-home-');
    await chmod(home, 0o555);
    const asPlainRoot =
      process.getuid?.() === 0
        ? ['setpriv', '--bounding-set=-dac_override,-dac_read_search,-fowner', '--inh-caps=-all', '--']
        : [];
    const result = await runCliProcess(['plan', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES], {
      prefix: asPlainRoot,
      env: { HOME: home, CLUSTERSTACK_CACHE_DIR: '' },
    });
    expect(result.stderr).toBe(
      `error: the cache directory ${home}/.cache/clusterstack-gitops (the default, under XDG_CACHE_HOME or HOME) cannot be created or written (EACCES); point --cache-dir or CLUSTERSTACK_CACHE_DIR at a directory this user may write\n`,
    );
    expect(result.code).toBe(1);
    expect(await readdir(home)).toEqual([]);
  });

  it('2: a bad flag (or variable) value, named, with nothing written', async () => {
    const cases: [string[], NodeJS.ProcessEnv, string][] = [
      [
        ['--release-source', EXAMPLE_RELEASES, '--secrets', 'encrypt', '--age-recipient', 'bogus'],
        {},
        'error: --age-recipient: "bogus" is not an age X25519 recipient',
      ],
      [
        ['--release-source', EXAMPLE_RELEASES, '--secrets', 'encrypt'],
        { CLUSTERSTACK_AGE_RECIPIENTS: 'age1nope' },
        'error: CLUSTERSTACK_AGE_RECIPIENTS: "age1nope" is not an age X25519 recipient',
      ],
      [
        ['--release-source', 'github:only-owner'],
        {},
        'error: --release-source: release source github:only-owner: expected github:<owner>/<repo>',
      ],
      [
        ['--release-source', 'oci://registry.example'],
        {},
        'error: --release-source: oci://registry.example names no repository',
      ],
      [
        ['--release-source', EXAMPLE_RELEASES, '--gitops', 'fluxx'],
        {},
        'error: --gitops: unknown GitOps engine "fluxx"',
      ],
      [
        [
          '--release-source',
          EXAMPLE_RELEASES,
          '--gitops',
          'flux',
          '--gitops-url',
          'https://git.example/fleet.git',
          '--gitops-namespace',
          'Flux_System',
        ],
        {},
        'error: --gitops-namespace: "Flux_System" is not a Kubernetes namespace name',
      ],
      [
        ['--release-source', EXAMPLE_RELEASES, '--values-timeout', 'soon'],
        {},
        'error: --values-timeout / CLUSTERSTACK_VALUES_TIMEOUT must be a duration such as 500ms, 2s or 5m, not "soon"',
      ],
      [
        ['--release-source', EXAMPLE_RELEASES],
        { CLUSTERSTACK_CHART_TIMEOUT: '0' },
        'error: --chart-timeout / CLUSTERSTACK_CHART_TIMEOUT must be at least 1 ms, not "0"',
      ],
      [
        ['--release-source', EXAMPLE_RELEASES, '--github-api-url', 'not a url'],
        {},
        'error: --github-api-url / GITHUB_API_URL must be an http:// or https:// URL',
      ],
      [
        ['--release-source', EXAMPLE_RELEASES, '--cache-dir', '/dev/null/cache'],
        {},
        'error: the cache directory /dev/null/cache (--cache-dir) cannot be created or written (ENOTDIR)',
      ],
    ];
    // The first case in a process of its own, the others here, one after another.
    const refused: Awaited<ReturnType<typeof refusedRender>>[] = [];
    for (const [index, [args, env]] of cases.entries()) refused.push(await refusedRender(args, env, index > 0));
    cases.forEach(([args, , message], index) => {
      const result = refused[index]!;
      expect(result.stderr, args.join(' ')).toContain(message);
      expect(result.stderr).toMatch(/\nRun 'clusterstack render --help' for its options and examples\.\n$/);
      expect(result.code, args.join(' ')).toBe(2);
    });
    const oci = await runClusterstack([
      'render',
      EXAMPLE_MANIFESTS,
      '--release-source',
      EXAMPLE_RELEASES,
      '--oci',
      'oci://localhost:1/fleet:Bad tag',
    ]);
    expect(oci.stderr).toMatch(/^error: --oci oci:\/\/localhost:1\/fleet:Bad tag: "Bad tag" is not a valid tag/);
    expect(oci.code).toBe(2);
    const listings: (readonly [readonly string[], string])[] = [
      [
        ['--kubernetes-version', 'one.thirty'],
        'error: --kubernetes-version must be a Kubernetes minor version such as 1.30, not "one.thirty"',
      ],
      [
        ['--channel', 'Stable'],
        'error: --channel must be a channel such as stable, custom or alpha (lowercase letters and digits), not "Stable"',
      ],
      [
        ['--source', 'github:only-owner'],
        'error: --source: release source github:only-owner: expected github:<owner>/<repo>',
      ],
    ];
    const listed: CliResult[] = [];
    for (const [args] of listings)
      listed.push(
        await runClusterstack(
          ['releases', 'list', ...(args[0] === '--source' ? [] : ['--source', EXAMPLE_RELEASES]), ...args],
          { env: cliEnvironment() },
        ),
      );
    listings.forEach(([, message], index) => {
      const result = listed[index]!;
      expect(result.stderr).toContain(message);
      expect(result.stdout).toBe('');
      expect(result.code).toBe(2);
    });
  });

  it('3: a release source that is down, blamed instead of the Clusters', async () => {
    const port = await closedPort();
    const result = await plan([
      '--release-source',
      'github:example/stacks',
      '--github-api-url',
      `http://127.0.0.1:${port}`,
      '--remote-timeout',
      '2s',
      '--cache-dir',
      await tempDir(),
    ]);
    expect(result.code).toBe(3);
    expect(result.stdout).toMatch(
      /ClusterStack cluster-stacks\/docker-ferrol-1-30: GitHub at http:\/\/127\.0\.0\.1:\d+: .*retry later/,
    );
    expect(result.stdout).toMatch(
      /cluster-stacks\/alpha .*whose release source github:example\/stacks could not be listed .*; retry later/,
    );
    expect(result.stdout).not.toMatch(/create one/);
  });

  it('4: an error clusterstack did not foresee, with the stack for the report', async () => {
    // Injected into the real process, no hook in the product: a preloaded module breaks stdout, so
    // printing the release list throws a TypeError no code of ours declares a kind for.
    const breakStdout = `data:text/javascript,${encodeURIComponent("process.stdout.write = () => { throw new TypeError('stdout is broken on purpose'); };")}`;
    const result = await runCliProcess(['releases', 'list', '--source', EXAMPLE_RELEASES], {
      nodeArgs: ['--import', breakStdout],
    });
    expect(result.code).toBe(4);
    expect(result.stderr).toMatch(
      /^error: stdout is broken on purpose\nThis is a bug in clusterstack \(an error of a kind it does not know\): please report it with this output and the command line\.\n {4}at /,
    );
  });
});

/** A local port nothing listens on: connections to it are refused at once. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
