// A rendered tree as one gzip tar whose bytes depend on the tree alone: ustar headers written here
// (sorted entries, parent directories before their contents, modes 0644/0755, uid/gid 0, empty
// owner names, mtime 0, no pax records), and a gzip member without file name or time. And the
// way back: a small in-memory reader that refuses anything a rendered tree cannot contain.
//
// Why ustar is written here and not by the `tar` package (or tar-stream): the bytes of this archive
// are published identity (the OCI layer digest, the content tag `sha-<digest>` and the revision
// annotation), so they must never change for an unchanged tree. Both libraries can be made
// reproducible, but neither writes these bytes: node-tar's Header pads numbers as "000644 \0"
// where ours are "0000644\0", lays out the checksum differently and splits prefixes by its own
// rule; tar-stream pads the same way and splits at the first "/"; both switch to pax records for
// non-ASCII names. Adopting either would re-push every unchanged tree once with a new revision,
// and their byte layout is not part of their API, so a dependency update could do it again.
// The writer is ~60 lines of the ustar format; test/reproducible-tar.test.ts pins its digest.
import { gunzipSync, gzipSync } from 'node:zlib';
import { DEFAULT_EXTRACT_LIMITS, type ExtractLimits } from '../src/release/safe-extract.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { PublishError } from './publish-error.js';
import { checkTreePaths } from './tree-paths.js';

const BLOCK = 512;
const NAME_BYTES = 100;
const PREFIX_BYTES = 155;
// ustar can name at most prefix (155) + "/" + name (100) bytes.
const MAX_PATH_BYTES = PREFIX_BYTES + 1 + NAME_BYTES;
const FILE_MODE = 0o644;
const DIRECTORY_MODE = 0o755;
// Offset 9 of a gzip member names the operating system; zlib fills in the one it was built for.
const GZIP_OS_BYTE = 9;
const GZIP_OS_UNIX = 3;

interface TarEntry {
  /** Path inside the archive; directories end with "/". */
  name: string;
  bytes: Buffer;
  directory: boolean;
  content: Buffer;
}

/**
 * The uncompressed ustar archive of `tree`: same tree, same bytes. Throws PublishError
 * ('invalid-input') for paths a tree may not hold or ustar cannot name (over 255 bytes).
 */
export function reproducibleTar(tree: RenderedTree): Buffer {
  checkTreePaths(tree);
  const entries: TarEntry[] = [];
  const directories = new Set<string>();
  for (const [file, content] of tree) {
    const segments = file.split('/');
    for (let end = 1; end < segments.length; end++) directories.add(`${segments.slice(0, end).join('/')}/`);
    entries.push({
      name: file,
      bytes: Buffer.from(file, 'utf8'),
      directory: false,
      content: Buffer.from(content, 'utf8'),
    });
  }
  for (const directory of directories)
    entries.push({ name: directory, bytes: Buffer.from(directory, 'utf8'), directory: true, content: Buffer.alloc(0) });
  // Byte order of the UTF-8 names: "a/" is a prefix of "a/x", so a directory precedes its contents.
  entries.sort((a, b) => Buffer.compare(a.bytes, b.bytes));
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    blocks.push(header(entry));
    if (entry.content.length > 0) {
      blocks.push(entry.content);
      const padding = (BLOCK - (entry.content.length % BLOCK)) % BLOCK;
      if (padding > 0) blocks.push(Buffer.alloc(padding));
    }
  }
  // The end of an archive: two zero blocks.
  blocks.push(Buffer.alloc(2 * BLOCK));
  return Buffer.concat(blocks);
}

/**
 * The gzip of `reproducibleTar(tree)`. zlib's gzip header carries mtime 0 and no file name; the OS
 * byte is pinned to Unix so the bytes do not depend on the platform. (A different zlib build may
 * still compress differently; the uncompressed tar is the stable identity of a tree.)
 */
export function reproducibleTarGzip(tree: RenderedTree): { tar: Buffer; gzip: Buffer } {
  const tar = reproducibleTar(tree);
  const gzip = gzipSync(tar, { level: 9 });
  gzip[GZIP_OS_BYTE] = GZIP_OS_UNIX;
  return { tar, gzip };
}

function header(entry: TarEntry): Buffer {
  const block = Buffer.alloc(BLOCK);
  const { name, prefix } = splitName(entry);
  name.copy(block, 0);
  prefix.copy(block, 345);
  octal(block, 100, 8, entry.directory ? DIRECTORY_MODE : FILE_MODE);
  octal(block, 108, 8, 0); // uid
  octal(block, 116, 8, 0); // gid
  octal(block, 124, 12, entry.content.length);
  octal(block, 136, 12, 0); // mtime
  block.write(entry.directory ? '5' : '0', 156, 'latin1');
  block.write('ustar\u000000', 257, 'latin1'); // magic "ustar\0", version "00"
  // uname and gname stay empty (all NUL); device numbers are zero.
  octal(block, 329, 8, 0);
  octal(block, 337, 8, 0);
  // The checksum is computed with its own field read as eight spaces.
  block.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 'latin1');
  return block;
}

/** Writes `value` as zero-padded octal digits followed by a NUL, filling `length` bytes. */
function octal(block: Buffer, offset: number, length: number, value: number): void {
  const digits = value.toString(8);
  if (digits.length > length - 1)
    throw new PublishError('invalid-input', `rendered tree: a value of ${value} does not fit a tar header field`);
  block.write(`${digits.padStart(length - 1, '0')}\u0000`, offset, 'latin1');
}

/** ustar's split of a long path: `prefix` (up to 155 bytes) "/" `name` (up to 100 bytes). */
function splitName(entry: TarEntry): { name: Buffer; prefix: Buffer } {
  const bytes = entry.bytes;
  if (bytes.length <= NAME_BYTES) return { name: bytes, prefix: Buffer.alloc(0) };
  if (bytes.length <= MAX_PATH_BYTES) {
    // Split at the last "/" that leaves a name short enough (a directory's own trailing "/" stays in the name).
    const searchEnd = entry.directory ? bytes.length - 2 : bytes.length - 1;
    for (let slash = bytes.lastIndexOf(0x2f, searchEnd); slash > 0; slash = bytes.lastIndexOf(0x2f, slash - 1)) {
      const name = bytes.subarray(slash + 1);
      if (name.length > NAME_BYTES) break;
      if (slash <= PREFIX_BYTES && name.length > 0) return { name, prefix: bytes.subarray(0, slash) };
    }
  }
  throw new PublishError(
    'invalid-input',
    `rendered tree: "${entry.name.replace(/\/$/, '')}" (${bytes.length} bytes) is too long for a tar archive (ustar): it must split at a "/" into a directory part of at most ${PREFIX_BYTES} bytes and a name of at most ${NAME_BYTES} bytes (${MAX_PATH_BYTES} in all); shorten the path`,
  );
}

/**
 * Reads a gzip (or plain) tar into a tree, entirely in memory, checking as extraction would: only
 * regular files and directories, no absolute paths, no "..", no ".git", within `limits`. Reads
 * pax and GNU long names (other tools write them); `label` names the archive in errors.
 */
export function readTarTree(
  archive: Uint8Array,
  label: string,
  limits: ExtractLimits = DEFAULT_EXTRACT_LIMITS,
): RenderedTree {
  const refuse = (reason: string): PublishError => new PublishError('invalid-target', `${label}: ${reason}`);
  let data: Buffer;
  const input = Buffer.from(archive.buffer, archive.byteOffset, archive.byteLength);
  if (input[0] === 0x1f && input[1] === 0x8b) {
    try {
      // Room for the file bytes plus, per entry, a header, a long-name record and padding.
      data = gunzipSync(input, { maxOutputLength: limits.maxTotalBytes + (limits.maxEntries + 2) * 4 * BLOCK });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
        throw refuse(`unpacks to more than the limit of ${limits.maxTotalBytes} bytes`);
      throw refuse(`is not a readable gzip stream (${(error as Error).message})`);
    }
  } else {
    data = input;
  }
  const tree: RenderedTree = new Map();
  let total = 0;
  let entries = 0;
  let longName: string | undefined;
  let paxPath: string | undefined;
  for (let offset = 0; offset + BLOCK <= data.length;) {
    const block = data.subarray(offset, offset + BLOCK);
    if (block.every((byte) => byte === 0)) break;
    if (!checksumMatches(block)) throw refuse(`has a corrupt tar header at byte ${offset}`);
    const size = parseOctal(block.subarray(124, 136));
    if (size === undefined) throw refuse(`has an unreadable size at byte ${offset}`);
    const start = offset + BLOCK;
    const end = start + size;
    if (end > data.length) throw refuse('is truncated');
    offset = start + Math.ceil(size / BLOCK) * BLOCK;
    const type = String.fromCharCode(block[156] ?? 0);
    const body = data.subarray(start, end);
    if (type === 'L') {
      longName = cString(body);
      continue;
    }
    if (type === 'x') {
      paxPath = paxRecords(body).get('path') ?? paxPath;
      continue;
    }
    if (type === 'g') continue; // Global pax records say nothing about names here.
    const ownName = cString(block.subarray(0, NAME_BYTES));
    const prefix =
      block.subarray(257, 263).toString('latin1') === 'ustar\u0000'
        ? cString(block.subarray(345, 345 + PREFIX_BYTES))
        : '';
    const name = paxPath ?? longName ?? (prefix === '' ? ownName : `${prefix}/${ownName}`);
    paxPath = undefined;
    longName = undefined;
    entries += 1;
    if (entries > limits.maxEntries) throw refuse(`has more than ${limits.maxEntries} entries`);
    const segments = name.split('/').filter((segment) => segment !== '' && segment !== '.');
    if (name.startsWith('/') || name.includes('\\') || name.includes('\0'))
      throw refuse(`entry "${name}" has an absolute path or a backslash`);
    if (segments.includes('..')) throw refuse(`entry "${name}" points outside the archive ("..")`);
    if (segments.some((segment) => segment.toLowerCase() === '.git'))
      throw refuse(`entry "${name}" lies inside a .git directory`);
    if (type === '5') continue;
    if (type !== '0' && type !== '\0' && type !== '7')
      throw refuse(`entry "${name}" is not a regular file or directory (tar type "${type}")`);
    if (segments.length === 0) throw refuse(`has a file entry without a name`);
    if (size > limits.maxFileBytes)
      throw refuse(`entry "${name}" is ${size} bytes, over the per-file limit of ${limits.maxFileBytes}`);
    total += size;
    if (total > limits.maxTotalBytes) throw refuse(`is larger than the limit of ${limits.maxTotalBytes} bytes`);
    const file = segments.join('/');
    if (tree.has(file)) throw refuse(`holds "${file}" twice`);
    tree.set(file, body.toString('utf8'));
  }
  try {
    checkTreePaths(tree);
  } catch (error) {
    throw refuse((error as Error).message);
  }
  return tree;
}

function checksumMatches(block: Buffer): boolean {
  const stored = parseOctal(block.subarray(148, 156));
  if (stored === undefined) return false;
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : (block[i] ?? 0);
  return sum === stored;
}

/** A numeric header field: octal text (NUL/space terminated), or GNU's base-256 for large values. */
function parseOctal(field: Buffer): number | undefined {
  if (((field[0] ?? 0) & 0x80) !== 0) {
    let value = 0;
    for (let i = 1; i < field.length; i++) value = value * 256 + (field[i] ?? 0);
    return Number.isSafeInteger(value) ? value : undefined;
  }
  const text = field
    .toString('latin1')
    .replace(/[\0 ]+$/g, '')
    .trim();
  if (text === '') return 0;
  if (!/^[0-7]+$/.test(text)) return undefined;
  return Number.parseInt(text, 8);
}

function cString(bytes: Buffer): string {
  const nul = bytes.indexOf(0);
  return (nul < 0 ? bytes : bytes.subarray(0, nul)).toString('utf8');
}

/** pax extended header records: "<length> <key>=<value>\n" each. */
function paxRecords(body: Buffer): Map<string, string> {
  const records = new Map<string, string>();
  let offset = 0;
  while (offset < body.length) {
    const space = body.indexOf(0x20, offset);
    if (space < 0) break;
    const length = Number.parseInt(body.subarray(offset, space).toString('latin1'), 10);
    if (!Number.isSafeInteger(length) || length <= 0) break;
    const record = body.subarray(space + 1, offset + length - 1).toString('utf8');
    const equals = record.indexOf('=');
    if (equals > 0) records.set(record.slice(0, equals), record.slice(equals + 1));
    offset += length;
  }
  return records;
}
