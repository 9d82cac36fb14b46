// Finds the real engines test/engines/build-engines.sh built from the Go module proxy: the pinned
// versions (test/engines/versions.json) and the per-machine cache they were built into. A missing
// engine fails the test that needs it with what to run; nothing is skipped and nothing stands in.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const VERSIONS_FILE = fileURLToPath(new URL('../../engines/versions.json', import.meta.url));

/** One engine as versions.json pins it. */
export interface PinnedEngine {
  name: string;
  module: string;
  version: string;
  go: string;
  bin?: Record<string, string>;
  crds?: string[];
  /** module -> version, where the proxy does not serve the version the engine requires. */
  replace?: Record<string, string>;
  why?: string;
}

/** What build-engines.sh recorded in <cache>/<name>-<version>/engine.json. */
export interface BuiltEngine {
  name: string;
  module: string;
  version: string;
  /** The Go that built it (`go env GOVERSION`). */
  go: string;
  binaries: string[];
  /** Module-relative paths of the CRD files kept. */
  crds: string[];
  /** The replacements versions.json asked for (module -> version). */
  replaced: Record<string, string>;
  buildSeconds: number;
  /** Where it is on this machine. */
  dir: string;
}

/** The engines versions.json pins, in its order. */
export function pinnedEngines(): PinnedEngine[] {
  return (JSON.parse(readFileSync(VERSIONS_FILE, 'utf8')) as { engines: PinnedEngine[] }).engines;
}

/** The per-machine engine cache, as build-engines.sh chooses it. */
export function engineCacheDir(): string {
  return process.env.CLUSTERSTACK_ENGINE_CACHE ?? path.join(os.homedir(), '.cache', 'clusterstack-gitops', 'engines');
}

/** The built engine `name` at its pinned version; throws, saying what to run, when it is not built. */
export function builtEngine(name: string): BuiltEngine {
  const pinned = pinnedEngines().find((engine) => engine.name === name);
  if (!pinned) throw new Error(`no engine named ${name} in ${VERSIONS_FILE}`);
  const dir = path.join(engineCacheDir(), `${pinned.name}-${pinned.version}`);
  const manifest = path.join(dir, 'engine.json');
  if (!existsSync(manifest)) {
    throw new Error(
      `${pinned.name} ${pinned.version} (${pinned.module}) is not built in ${dir}: run test/install-test-deps.sh (it builds the pinned engines from the Go module proxy once per machine)`,
    );
  }
  return { ...(JSON.parse(readFileSync(manifest, 'utf8')) as Omit<BuiltEngine, 'dir'>), dir };
}

/** The path of one binary of a built engine (e.g. `engineBinary('kubernetes', 'kube-apiserver')`). */
export function engineBinary(name: string, binary: string): string {
  const engine = builtEngine(name);
  if (!engine.binaries.includes(binary))
    throw new Error(
      `${name} ${engine.version} in ${engine.dir} has no binary ${binary} (it has ${engine.binaries.join(', ') || 'none'})`,
    );
  return path.join(engine.dir, 'bin', binary);
}

/** The CRD files a built engine carries, sorted by file name. */
export function engineCrdFiles(name: string): string[] {
  const engine = builtEngine(name);
  const dir = path.join(engine.dir, 'crds');
  return readdirSync(dir)
    .filter((file) => file.endsWith('.yaml'))
    .sort()
    .map((file) => path.join(dir, file));
}
