// Per-machine seeds for real API servers: an etcd data directory in which a real kube-apiserver has
// already bootstrapped itself and established a set of CRDs. Creating a CRD makes kube-apiserver
// validate it (its CEL rules compiled and costed) and rebuild its OpenAPI; a broker server's 20 CRD
// files cost about 4.5 CPU-s of kube-apiserver's that way, at every start. A server started on a copy
// of a seed is still the real kube-apiserver over the real etcd: it reads the CRDs from etcd as after
// a restart. A seed is keyed by what made it (the engines' versions and Go, the server flags that
// reach etcd, each CRD file's content), written whole or not at all, and checked at every use.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { builtEngine } from './engine-cache.js';

/** Bumped when what a seed holds, or how it is made, changes: older seeds are then never used. */
const SEED_FORMAT = 1;
/** A seed unused this long is removed when another is made: CRD and engine changes leave old ones behind. */
const UNUSED_MS = 14 * 24 * 3600_000;
const MARKER = 'seed.json';

/** Where seeds are kept on this machine (CLUSTERSTACK_KUBE_SEED_CACHE overrides). */
export function seedCacheDir(): string {
  return (
    process.env.CLUSTERSTACK_KUBE_SEED_CACHE ?? path.join(os.homedir(), '.cache', 'clusterstack-gitops', 'kube-seeds')
  );
}

/**
 * The key of a seed for `crdFiles` on servers started with `serverSettings` (the flags whose values
 * etcd keeps, e.g. the service network): any change to an engine, a setting or a CRD file's name or
 * content gives another key.
 */
export function seedKey(crdFiles: string[], serverSettings: Record<string, string>): string {
  const hash = createHash('sha256');
  const kubernetes = builtEngine('kubernetes');
  const etcd = builtEngine('etcd');
  hash.update(
    JSON.stringify({
      format: SEED_FORMAT,
      kubernetes: [kubernetes.version, kubernetes.go],
      etcd: [etcd.version, etcd.go],
      serverSettings,
    }),
  );
  for (const file of crdFiles)
    hash.update(`\n${path.basename(file)}\n${createHash('sha256').update(readFileSync(file)).digest('hex')}`);
  return hash.digest('hex').slice(0, 32);
}

/** The kept seed's etcd data directory for `key` in `root`, or undefined when none is kept (or it is incomplete). */
export function keptSeed(root: string, key: string): string | undefined {
  const dir = path.join(root, key);
  const marker = path.join(dir, MARKER);
  try {
    if ((JSON.parse(readFileSync(marker, 'utf8')) as { key?: string }).key !== key) return undefined;
  } catch {
    return undefined;
  }
  // Its time of last use, for pruning.
  const now = new Date();
  utimesSync(marker, now, now);
  return path.join(dir, 'etcd');
}

/**
 * Keeps a copy of `etcdDataDir` (etcd stopped cleanly) as the seed for `key` in `root`: written under a
 * temporary name and renamed, so a reader sees a whole seed or none; when another process kept one
 * for the same key first, that one stays. Prunes seeds unused for two weeks.
 */
export function keepSeed(root: string, key: string, etcdDataDir: string, crdNames: string[]): void {
  mkdirSync(root, { recursive: true });
  const temp = path.join(root, `.${key}.${process.pid}.${Date.now()}`);
  try {
    mkdirSync(temp);
    copyDataDir(etcdDataDir, path.join(temp, 'etcd'));
    writeFileSync(path.join(temp, MARKER), `${JSON.stringify({ key, crds: crdNames }, null, 2)}\n`);
    renameSync(temp, path.join(root, key));
  } catch (error) {
    // Kept by another process meanwhile (the rename then fails on a full directory): that one serves.
    if (!existsSync(path.join(root, key, MARKER))) throw error;
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
  prune(root, key);
}

/** Removes the seed for `key` from `root`: it did not start, or did not hold what its key says. */
export function dropSeed(root: string, key: string): void {
  const dir = path.join(root, key);
  const gone = path.join(root, `.${key}.dropped.${process.pid}.${Date.now()}`);
  try {
    renameSync(dir, gone);
  } catch {
    return;
  }
  rmSync(gone, { recursive: true, force: true });
}

/**
 * Copies an etcd data directory. Sparse: etcd preallocates its write-ahead log (64 MB of zeros), and
 * `cp --sparse=always` neither reads nor writes them as blocks.
 */
export function copyDataDir(from: string, to: string): void {
  execFileSync('cp', ['-R', '--sparse=always', from, to], { stdio: 'pipe' });
}

function prune(root: string, keep: string): void {
  for (const name of readdirSync(root)) {
    if (name === keep || name.startsWith('.')) continue;
    try {
      if (Date.now() - statSync(path.join(root, name, MARKER)).mtimeMs > UNUSED_MS)
        rmSync(path.join(root, name), { recursive: true, force: true });
    } catch {
      // Being made or removed by another process.
    }
  }
}
