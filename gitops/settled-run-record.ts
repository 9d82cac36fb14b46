// What a publisher keeps beside its target, outside the published tree, about the last settled run
// (one that withheld nothing, warned about nothing and left nothing half-moved): its fingerprint
// (src/pipeline/run-fingerprint.ts), what its report said, and the target's own proof that it still
// holds exactly what that run left there (a directory: the stat of every file of its tree; Git: the
// commit or the tree id under the path). A run whose fingerprint equals the record's, on a target
// whose proof still holds, would render nothing new: it ends there ("nothing changed") without
// reading the tree or starting helm. Anything else — no record, a damaged one, any sign of a change
// in the target — means: render as usual.
import { randomBytes } from 'node:crypto';
import { lstatSync, readdirSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import type { Publisher } from './publisher.js';
import { crashPoint } from './crash-point.js';

/** What a settled run leaves for the next one: its fingerprint and the parts of its report a run that changes nothing repeats. */
export interface SettledRun {
  fingerprint: string;
  report: Record<string, unknown>;
}

/** A publisher that can prove, cheaply, that its target still holds what a settled run left there. */
export interface SettledRunStore {
  /**
   * The last settled run, when its fingerprint is `fingerprint` and the target provably still holds
   * exactly what it left; undefined otherwise. The proof (a stat of every file, a `git status`, an
   * `ls-remote`) is taken only for a matching record: a run with other inputs renders anyway.
   */
  readSettledRun(fingerprint: string): Promise<SettledRun | undefined>;
  /**
   * After a settled run published (or found nothing to change): records it with the target's proof.
   * `revision` is what publish returned (the commit holding the tree, for Git). Hold the lock.
   */
  recordSettledRun(run: SettledRun, revision: string | null): Promise<void>;
  /** Before any other run publishes: a record never outlives the target state it describes. */
  forgetSettledRun(): Promise<void>;
  /**
   * Whether any settled run is recorded, known without opening anything remote or taking a proof;
   * false means no run can be found settled, so the next one renders for sure. Optional: a store
   * that cannot tell cheaply leaves it out.
   */
  hasSettledRun?(): Promise<boolean>;
}

export function isSettledRunStore(publisher: Publisher): publisher is Publisher & SettledRunStore {
  const candidate = publisher as Partial<SettledRunStore>;
  return (
    typeof candidate.readSettledRun === 'function' &&
    typeof candidate.recordSettledRun === 'function' &&
    typeof candidate.forgetSettledRun === 'function'
  );
}

/** Bump when the record's meaning changes: older records are then ignored (one full run). */
const RECORD_FORMAT = 1;

/** The record a store wrote, with its proof, if the file holds one of this format. */
export async function readRecordFile<Proof>(file: string): Promise<(SettledRun & { proof: Proof }) | undefined> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as {
      format?: unknown;
      fingerprint?: unknown;
      report?: unknown;
      proof?: unknown;
    };
    if (
      parsed.format !== RECORD_FORMAT ||
      typeof parsed.fingerprint !== 'string' ||
      typeof parsed.report !== 'object' ||
      parsed.report === null ||
      parsed.proof === undefined
    )
      return undefined;
    return {
      fingerprint: parsed.fingerprint,
      report: parsed.report as Record<string, unknown>,
      proof: parsed.proof as Proof,
    };
  } catch {
    return undefined;
  }
}

/** Writes the record whole or not at all (a temporary file renamed over it). */
export async function writeRecordFile(file: string, run: SettledRun, proof: unknown): Promise<void> {
  const temp = `${file}.${randomBytes(6).toString('hex')}`;
  try {
    await writeFile(
      temp,
      `${JSON.stringify({ format: RECORD_FORMAT, fingerprint: run.fingerprint, report: run.report, proof })}\n`,
    );
    crashPoint('settled-run:written');
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

export async function removeRecordFile(file: string): Promise<void> {
  await rm(file, { force: true });
}

/**
 * What a directory tree's stat says about it: every entry (a directory's path ends in `/`; the tree's
 * own top is `''`) and a digest of their stat (type and mode, inode, size, modification and change
 * times). Any write to a file changes its change time (ctime), which no one can set back by hand;
 * adding, removing or renaming an entry changes its directory's. So when every listed entry still
 * stats the same, the files hold what they held when the evidence was taken — known without
 * reading a file or even listing a directory (20,000 files: about 0.1 s, against seconds to read).
 */
export interface StatEvidence {
  entries: string[];
  digest: string;
}

/** Lists and stats everything under `root` (synchronously: a promise per stat costs several times more). */
export function takeStatEvidence(root: string): StatEvidence {
  const entries: string[] = [''];
  const walk = (dir: string): void => {
    const names = readdirSync(dir === '' ? root : `${root}/${dir}`, { withFileTypes: true })
      .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name))
      .sort();
    for (const name of names) {
      entries.push(`${dir}${name}`);
      if (name.endsWith('/')) walk(`${dir}${name}`);
    }
  };
  walk('');
  const digest = statDigest(root, entries);
  if (digest === undefined) throw new Error(`${root} changed while it was being listed`);
  return { entries, digest };
}

/** True when every entry of `evidence` stats under `root` as it did when the evidence was taken. */
export function statEvidenceHolds(root: string, evidence: StatEvidence): boolean {
  if (!Array.isArray(evidence.entries) || typeof evidence.digest !== 'string') return false;
  try {
    return statDigest(root, evidence.entries) === evidence.digest;
  } catch {
    // A directory turned into a file (ENOTDIR), a permission taken away: no proof.
    return false;
  }
}

/** A digest of the stat of `entries` under `root`; undefined when one is gone. */
function statDigest(root: string, entries: readonly string[]): string | undefined {
  const hash = createHash('sha256');
  for (const entry of entries) {
    const info = lstatSync(entry === '' ? root : `${root}/${entry}`, { throwIfNoEntry: false });
    if (info === undefined) return undefined;
    hash.update(`${entry}\0${info.mode}\0${info.ino}\0${info.size}\0${info.mtimeMs}\0${info.ctimeMs}\n`);
  }
  return `sha256:${hash.digest('hex')}`;
}
