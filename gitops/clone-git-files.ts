// What the git directory of a clone the publishers made (in their cache) says, read from its files
// instead of asking a git process: each answer is either what git would say, or undefined, and then
// the caller asks git. The publishers start git dozens of times per run; a fork and exec per
// question about their own clone is most of what a run that changes nothing costs.
import { readFile } from 'node:fs/promises';
import path from 'node:path';

const OBJECT_ID = /^[0-9a-f]{40,64}$/;

/**
 * Where `ref` points as the git directory stores it (a loose ref file, else packed-refs); undefined
 * when it is not there or not stored that way (another ref backend).
 */
export async function storedRef(gitDir: string, ref: string): Promise<string | undefined> {
  const loose = (await readFile(path.join(gitDir, ref), 'utf8').catch(() => '')).trim();
  if (OBJECT_ID.test(loose)) return loose;
  const packed = await readFile(path.join(gitDir, 'packed-refs'), 'utf8').catch(() => '');
  const line = packed.split('\n').find((entry) => entry.endsWith(` ${ref}`));
  const id = line?.slice(0, line.indexOf(' '));
  return id !== undefined && OBJECT_ID.test(id) ? id : undefined;
}

/** The commit the last fetch of one ref found (its FETCH_HEAD); undefined when it cannot be read. */
export async function fetchedHead(gitDir: string): Promise<string | undefined> {
  const text = await readFile(path.join(gitDir, 'FETCH_HEAD'), 'utf8').catch(() => '');
  const lines = text.split('\n').filter((line) => line !== '');
  const id = lines.length === 1 ? lines[0]!.split('\t')[0] : undefined;
  return id !== undefined && OBJECT_ID.test(id) ? id : undefined;
}

/** Whether HEAD is the symbolic ref `ref` (false also when that cannot be read from the file). */
export async function headIs(gitDir: string, ref: string): Promise<boolean> {
  return (await readFile(path.join(gitDir, 'HEAD'), 'utf8').catch(() => '')) === `ref: ${ref}\n`;
}

/**
 * remote.origin.url when git wrote it into the config file plainly (`git remote add` does: one
 * `url = <value>` line, no quoting); undefined when it cannot tell so simply.
 */
export async function plainOriginUrl(gitDir: string): Promise<string | undefined> {
  const text = await readFile(path.join(gitDir, 'config'), 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  const sections = text.split(/^(?=\s*\[)/m).filter((section) => /^\s*\[remote "origin"\]\s*$/m.test(section));
  if (sections.length !== 1) return undefined;
  const urls = sections[0]!.split('\n').filter((line) => /^\s*url\s*=/.test(line));
  if (urls.length !== 1) return undefined;
  const value = urls[0]!.replace(/^\s*url\s*=\s*/, '');
  // Quoting, escapes, comments or padding would need git's own parser.
  return /["\\;#]|\s$/.test(value) || value === '' ? undefined : value;
}
