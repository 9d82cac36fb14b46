// One commit made from a known parent and the files that differ from it, without a work tree or an
// index: `git fast-import` reads only the parent's trees on the changed paths and writes only the
// new objects (one small pack). At a large fleet (tens of thousands of files) this is what keeps a
// one-cluster change from costing a whole-tree `reset --hard`, `clean`, `add` and `commit` (each of
// which looks at every file). The stream is built by a pure function; `fastCommit` runs it.
import type { GitCommand, GitIdentity } from './git-command.js';

export interface FastCommitInput {
  /** The ref the commit is written to (`refs/heads/<branch>`); set even when it pointed elsewhere. */
  ref: string;
  /** The commit it builds on; null for the first commit of a branch. */
  parent: string | null;
  author: GitIdentity;
  message: string;
  /** Repository paths and their new contents (written as regular, non-executable files). */
  written: ReadonlyArray<readonly [string, string]>;
  /** Repository paths to remove. */
  removed: readonly string[];
  /** A directory whose tree id in the new commit is wanted (asked of fast-import itself: no other process). */
  treeOf?: string;
}

export interface FastCommitResult {
  commit: string;
  /** With `treeOf`: that directory's tree id in the commit; undefined when the commit has no such directory. */
  tree?: string;
}

/** What `git commit --cleanup=whitespace` makes of a message: trailing spaces and surplus blank lines gone. */
export function cleanupCommitMessage(message: string): string {
  let out = '';
  let blank = false;
  for (const raw of message.split('\n')) {
    const line = raw.replace(/[ \t\r]+$/, '');
    if (line === '') {
      blank = true;
      continue;
    }
    if (blank && out !== '') out += '\n';
    blank = false;
    out += `${line}\n`;
  }
  return out;
}

/** A name or email as git writes it into a commit: no `<`, `>` or newline, no crud at either end (git's ident.c). */
function identPart(value: string): string {
  return value.replace(/[<>\n]/g, '').replace(/^[\s.,:;"']+|[\s.,:;"']+$/g, '');
}

/** A path as fast-import reads it: always C-quoted, so spaces, quotes and any byte are safe. */
function quotePath(file: string): string {
  let out = '"';
  for (const char of file) {
    const code = char.codePointAt(0)!;
    if (char === '"' || char === '\\') out += `\\${char}`;
    else if (code < 0x20 || code === 0x7f) out += `\\${code.toString(8).padStart(3, '0')}`;
    else out += char;
  }
  return `${out}"`;
}

/**
 * The fast-import stream of one commit, piece by piece (a whole fleet's first commit is tens of
 * megabytes: never joined into one buffer); `get-mark :1` makes fast-import print the commit's id.
 */
function* fastImportStream(input: FastCommitInput): Generator<Buffer> {
  const message = cleanupCommitMessage(input.message);
  if (message === '') throw new Error('internal error: empty commit message');
  const ident = `${identPart(input.author.name)} <${identPart(input.author.email)}> now`;
  const data = (value: string): Buffer[] => {
    const bytes = Buffer.from(value, 'utf8');
    return [Buffer.from(`data ${bytes.length}\n`), bytes, Buffer.from('\n')];
  };
  // Without `from`, a branch fast-import does not know yet starts with no parent.
  yield Buffer.from(
    `reset ${input.ref}\n\ncommit ${input.ref}\nmark :1\nauthor ${ident}\ncommitter ${ident}\n`,
    'utf8',
  );
  yield* data(message);
  if (input.parent !== null) yield Buffer.from(`from ${input.parent}\n`);
  for (const file of input.removed) yield Buffer.from(`D ${quotePath(file)}\n`, 'utf8');
  for (const [file, content] of input.written) {
    yield Buffer.from(`M 100644 inline ${quotePath(file)}\n`, 'utf8');
    yield* data(content);
  }
  yield Buffer.from('\n');
  if (input.treeOf !== undefined) yield Buffer.from(`ls :1 ${quotePath(input.treeOf)}\n`, 'utf8');
  yield Buffer.from('get-mark :1\ndone\n');
}

/**
 * Writes the commit and points `ref` at it; returns the commit id (and the tree id of `treeOf`).
 * Nothing else in the repository changes.
 */
export async function fastCommit(git: GitCommand, input: FastCommitInput): Promise<FastCommitResult> {
  // --force: the ref may point elsewhere (a commit a failed push left); --date-format=now: the
  // committer date is the clock's, as `git commit` sets it.
  const output = await git.runWithInput(
    ['fast-import', '--quiet', '--force', '--done', '--date-format=now'],
    fastImportStream(input),
    'git fast-import',
  );
  const lines = output.trim().split('\n');
  const id = lines.at(-1) ?? '';
  if (!/^[0-9a-f]{40,64}$/.test(id))
    throw new Error(`git fast-import did not name the commit it wrote (printed "${output.trim().slice(0, 200)}")`);
  // `ls` answers `040000 tree <id>\t<path>` (or `missing <path>`) before get-mark's line.
  const tree =
    input.treeOf === undefined ? undefined : /^040000 tree ([0-9a-f]{40,64})\t/.exec(lines.at(-2) ?? '')?.[1];
  return tree === undefined ? { commit: id } : { commit: id, tree };
}
