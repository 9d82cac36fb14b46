// The package's library entry: what `import('clusterstack-gitops')` gives, pinned, and proof that it
// works from the packed package installed into a fresh project with npm, imported by plain node.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import * as entry from '../src/index.js';
import { transpileSources } from './support/transpiled-sources.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const PACKAGE = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  main: string;
  types: string;
  exports: Record<string, Record<string, string>>;
  files: string[];
  dependencies: Record<string, string>;
  overrides?: Record<string, string>;
};

// Adding to this list is a decision about the public API: document the new export in src/index.ts.
const EXPORTS = [
  'DirectoryPublisher',
  'EXIT_CODES',
  'FAILURE_REACTIONS',
  'Failure',
  'GitPublisher',
  'InputError',
  'MassDeletionRefusedError',
  'OciArtifactPublisher',
  'PullRequestPublisher',
  'YamlDecodeError',
  'buildPlan',
  'createHelmDependencies',
  'createSourceOpener',
  'decideUnits',
  'decodeYamlDocuments',
  'encodeYaml',
  'failureKindOf',
  'failureKindOfReason',
  'planReport',
  'readInputFiles',
  'readPublishedState',
  'renderAndPublish',
  'renderOutput',
  'resolveSecretEncryption',
];

describe('the library entry (src/index.ts)', () => {
  it('exports exactly the documented API', () => {
    expect(Object.keys(entry).sort()).toEqual([...EXPORTS].sort());
  });

  it('says in one line above every export what it is', () => {
    const lines = readFileSync(path.join(ROOT, 'src/index.ts'), 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (line.startsWith('export ')) expect(lines[i - 1], line).toMatch(/^\/\*\* .+ \*\/$/);
    });
  });

  it('is where package.json points, as tsc emits it', () => {
    // tsconfig: rootDir '.', outDir 'dist', so src/index.ts becomes dist/src/index.{js,d.ts}.
    expect(PACKAGE.main).toBe('dist/src/index.js');
    expect(PACKAGE.types).toBe('dist/src/index.d.ts');
    expect(PACKAGE.exports).toEqual({
      '.': { types: './dist/src/index.d.ts', import: './dist/src/index.js', default: './dist/src/index.js' },
    });
  });
});

/** Runs a command, failing with its output; npm_* variables of an outer `npm test` are dropped so npm acts on `cwd` only. */
function run(command: string, args: string[], cwd: string): string {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')),
  );
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8' });
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(' ')} failed (${result.status}): ${result.stderr}${result.stdout}`);
  return result.stdout;
}

describe('the packed package', () => {
  const work = mkdtempSync(path.join(tmpdir(), 'package-entry-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  // The limit only stops a stuck run: unpacking the 164 MB of real dependencies took over 60 s at load 36.
  it('imports with plain node from a clean npm install of the tarball, with its run-time files', async () => {
    // A copy of the package with dist/ transpiled file by file (esbuild: the JavaScript tsc emits,
    // without the 20 s type check that `npm run typecheck` and `npm run build` do anyway).
    const stage = path.join(work, 'stage');
    mkdirSync(stage);
    for (const item of ['package.json', 'README.md', 'crds', 'examples', 'docs', 'gitops/health'])
      cpSync(path.join(ROOT, item), path.join(stage, item), { recursive: true });
    await transpileSources(ROOT, path.join(stage, 'dist'));
    // The entry's declarations: the real pack has every .d.ts from tsc; here the one `types` names.
    writeFileSync(path.join(stage, PACKAGE.types), 'export {};\n');

    const tarball = run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', work], stage)
      .trim()
      .split('\n')
      .pop()!;
    const tarballPath = path.join(work, tarball);

    // A fresh project whose lock holds the tarball and this repository's locked dependencies, so
    // `npm ci` installs exactly what a user gets, from npm's cache (the registry when missing).
    const consumer = path.join(work, 'consumer');
    mkdirSync(consumer);
    const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; link?: boolean }>;
    };
    const dependency = `file:${tarball}`;
    cpSync(tarballPath, path.join(consumer, tarball));
    const packages: Record<string, unknown> = {
      '': { name: 'consumer', dependencies: { [PACKAGE.name]: dependency } },
      [`node_modules/${PACKAGE.name}`]: {
        version: PACKAGE.version,
        resolved: dependency,
        integrity: `sha512-${createHash('sha512').update(readFileSync(tarballPath)).digest('base64')}`,
        dependencies: PACKAGE.dependencies,
      },
    };
    for (const [key, value] of Object.entries(lock.packages))
      if (key !== '' && !value.dev && !value.link) packages[key] = value;
    // The repository's overrides pin what its lock holds; a consumer needs them for the same tree.
    writeFileSync(
      path.join(consumer, 'package.json'),
      JSON.stringify({
        name: 'consumer',
        private: true,
        type: 'module',
        dependencies: { [PACKAGE.name]: dependency },
        overrides: PACKAGE.overrides ?? {},
      }),
    );
    writeFileSync(
      path.join(consumer, 'package-lock.json'),
      JSON.stringify({ name: 'consumer', lockfileVersion: 3, requires: true, packages }),
    );
    run('npm', ['ci', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], consumer);

    const installed = path.join(consumer, 'node_modules', PACKAGE.name);
    const printed = run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const api = await import(${JSON.stringify(PACKAGE.name)}); console.log(JSON.stringify(Object.keys(api).sort()));`,
      ],
      consumer,
    );
    expect(JSON.parse(printed)).toEqual([...EXPORTS].sort());

    // What the package reads at run time or users take from it: health checks, CRDs, the example.
    for (const file of [
      'gitops/health/clusterstack.x-k8s.io_ClusterStack.lua',
      'gitops/health/argoproj.io_Application.lua',
      'gitops/health/argocd-cm-health-patch.yaml',
      'gitops/health/kustomization.yaml',
      'crds/clusterstack.x-k8s.io_clusterstacks.yaml',
      'examples/quickstart/manifests',
      'dist/src/cli/main.js',
      PACKAGE.types,
    ]) {
      expect(existsSync(path.join(installed, file)), file).toBe(true);
    }
    // The README's links into docs/ resolve in the installed package too (npm shows the README).
    const readme = readFileSync(path.join(installed, 'README.md'), 'utf8');
    const docLinks = [...readme.matchAll(/\]\((docs\/[^)#]+)/g)].map((match) => match[1]!);
    expect(docLinks.length).toBeGreaterThan(5);
    for (const file of docLinks) expect(existsSync(path.join(installed, file)), file).toBe(true);
    // The module that reads the health scripts finds them in the installed package.
    const healthDir = run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const m = await import(${JSON.stringify(path.join(installed, 'dist/gitops/health/argocd-health-patch.js'))}); console.log(m.defaultHealthDir());`,
      ],
      consumer,
    ).trim();
    expect(healthDir).toBe(path.join(installed, 'gitops/health'));
    // Internal modules stay internal.
    expect(() =>
      run(
        process.execPath,
        ['--input-type=module', '-e', `await import('${PACKAGE.name}/dist/src/config.js')`],
        consumer,
      ),
    ).toThrow(/ERR_PACKAGE_PATH_NOT_EXPORTED/);
  }, 180_000);
});
