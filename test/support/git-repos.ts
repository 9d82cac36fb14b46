/** Real Git repositories for tests: bare remotes, a second clone pushing in between, hooks. */
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** An environment that ignores the developer's git config and any GIT_* variables of a hook. */
export function hermeticGitEnv(home: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 'Other Writer',
    GIT_AUTHOR_EMAIL: 'other@example.com',
    GIT_COMMITTER_NAME: 'Other Writer',
    GIT_COMMITTER_EMAIL: 'other@example.com',
    LC_ALL: 'C',
  };
}

export class GitSandbox {
  readonly root: string;
  private readonly env: Record<string, string>;

  constructor() {
    this.root = mkdtempSync(path.join(os.tmpdir(), 'clusterstack-git-'));
    mkdirSync(path.join(this.root, 'home'));
    this.env = hermeticGitEnv(path.join(this.root, 'home'));
  }

  /** Runs git and returns trimmed stdout; throws with stderr on failure. */
  git(cwd: string, ...args: string[]): string {
    return execFileSync('git', args, {
      cwd,
      env: this.env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
  }

  /**
   * A PATH (before this process's) whose git appends each command it runs (the first argument
   * after the `-c` settings) to the file $COMMAND_LOG names: what a publisher starts, counted.
   */
  loggingGitPath(): string {
    const bin = path.join(this.root, 'logging-git');
    if (!existsSync(bin)) {
      mkdirSync(bin);
      const real = this.git(this.root, '--exec-path');
      writeFileSync(
        path.join(bin, 'git'),
        [
          '#!/bin/sh',
          'skip=; for arg in "$@"; do if [ -n "$skip" ]; then skip=; elif [ "$arg" = -c ]; then skip=1; else echo "$arg" >> "$COMMAND_LOG"; break; fi; done',
          `exec '${real}/git' "$@"`,
          '',
        ].join('\n'),
        { mode: 0o755 },
      );
    }
    return `${bin}:${process.env.PATH ?? ''}`;
  }

  /** A bare repository at `<root>/<name>.git`, optionally seeded with files on `branch`. */
  bareRepo(name: string, seed?: { branch: string; files: Record<string, string> }): string {
    const bare = path.join(this.root, `${name}.git`);
    this.git(this.root, 'init', '--quiet', '--bare', `--initial-branch=${seed?.branch ?? 'main'}`, bare);
    // Every push into it would start `git gc --auto` (a git process that finds nothing to do in a test's
    // few objects): written into its config directly, which a `git config` would take a process for.
    appendFileSync(path.join(bare, 'config'), '[receive]\n\tautogc = false\n');
    // A new repository has no branch and no HEAD tree to build on: nothing to look up first.
    if (seed !== undefined) this.fastImport(bare, seed.branch, seed.files, 'Seed', { parent: '', headTree: '' });
    return bare;
  }

  /**
   * Commits `files` on `branch` of `remote` (a repository on this machine) as another writer would
   * from a clone: on top of the branch, or when it is missing on a new branch that starts with the
   * files of the remote's HEAD (as `checkout --orphan` in a fresh clone does). Written with one `git
   * fast-import` into the repository itself: a clone, add, commit and push took ten git processes,
   * each a fork of this large test process. Hooks of `remote` do not run.
   */
  commitFiles(remote: string, branch: string, files: Record<string, string>, message: string): string {
    const [parent, headTree] = this.objects(remote, [`refs/heads/${branch}`, 'HEAD^{tree}']);
    return this.fastImport(remote, branch, files, message, { parent: parent!, headTree: headTree! });
  }

  /** The commit of `files` on `branch` written by one `git fast-import`, on `parent` or else on `headTree` ('' for none). */
  private fastImport(
    remote: string,
    branch: string,
    files: Record<string, string>,
    message: string,
    base: { parent: string; headTree: string },
  ): string {
    const lines: Buffer[] = [];
    const text = (value: string): void => void lines.push(Buffer.from(value));
    const data = (content: string | Buffer): void => {
      const bytes = Buffer.from(content);
      text(`data ${bytes.length}\n`);
      lines.push(bytes);
      text('\n');
    };
    const at = `${Math.floor(Date.now() / 1000)} +0000`;
    text(`commit refs/heads/${branch}\nmark :1\n`);
    text(`author ${this.env.GIT_AUTHOR_NAME} <${this.env.GIT_AUTHOR_EMAIL}> ${at}\n`);
    text(`committer ${this.env.GIT_COMMITTER_NAME} <${this.env.GIT_COMMITTER_EMAIL}> ${at}\n`);
    data(`${message}\n`);
    if (base.parent !== '') text(`from ${base.parent}\n`);
    else if (base.headTree !== '') text(`M 040000 ${base.headTree} ""\n`);
    for (const [file, content] of Object.entries(files)) {
      text(`M 100644 inline ${fastImportPath(file)}\n`);
      data(content);
    }
    text('get-mark :1\n');
    return execFileSync('git', ['fast-import', '--quiet', '--done'], {
      cwd: remote,
      env: this.env,
      input: Buffer.concat([...lines, Buffer.from('done\n')]),
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'pipe'],
    }).trim();
  }

  /**
   * The object each of `revisions` names in `repo`, '' for one that names none: one `git cat-file
   * --batch-check` for them all (a git process per name forks this large test process each time).
   */
  private objects(repo: string, revisions: string[]): string[] {
    const answers = execFileSync('git', ['cat-file', '--batch-check=%(objectname)'], {
      cwd: repo,
      env: this.env,
      input: revisions.map((revision) => `${revision}\n`).join(''),
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'pipe'],
    }).split('\n');
    // `<name> missing` (or `ambiguous`) for a name that resolves to no object.
    return revisions.map((_, index) => (/^[0-9a-f]{40,64}$/.test(answers[index]!) ? answers[index]! : ''));
  }

  /** The sha of `branch` in `repo`, or '' when it does not exist. */
  head(repo: string, branch: string): string {
    return this.objects(repo, [`refs/heads/${branch}`])[0]!;
  }

  /** Every file at the tip of `branch`, path -> content, read from one commit (the branch may move meanwhile). */
  files(repo: string, branch: string): Record<string, string> {
    return this.filesAt(repo, `refs/heads/${branch}`);
  }

  /**
   * As `files`, or undefined when `branch` does not exist (yet), nor a repository at `repo`: two git
   * processes, one when it is missing (`head` and then `files` took four).
   */
  filesIfAny(repo: string, branch: string): Record<string, string> | undefined {
    try {
      return this.filesAt(repo, `refs/heads/${branch}`);
    } catch (error) {
      const { code, stderr } = error as { code?: unknown; stderr?: unknown };
      if (code === 'ENOENT' || /Not a valid object name|not a git repository/.test(String(stderr))) return undefined;
      throw error;
    }
  }

  /** Every file of the commit `revision` names (a sha, `HEAD~2`, a ref), path -> content: two git processes however many files. */
  filesAt(repo: string, revision: string): Record<string, string> {
    // `<mode> <type> <object>\t<path>` per entry, of the one commit the revision names when ls-tree reads it;
    // blobs only (a submodule's commit has no content here).
    const entries = this.git(repo, 'ls-tree', '-r', '-z', `${revision}^{commit}`)
      .split('\0')
      .filter(Boolean)
      .map((entry) => ({
        meta: entry.slice(0, entry.indexOf('\t')).split(' '),
        file: entry.slice(entry.indexOf('\t') + 1),
      }))
      .filter(({ meta }) => meta[1] === 'blob');
    if (entries.length === 0) return {};
    // One `git cat-file --batch` reads every blob: a process per file costs more than the test it serves.
    const batch = execFileSync('git', ['cat-file', '--batch'], {
      cwd: repo,
      env: this.env,
      input: entries.map(({ meta }) => `${meta[2]}\n`).join(''),
      maxBuffer: 1024 * 1024 * 1024,
    });
    const files: Record<string, string> = {};
    let at = 0;
    for (const { file, meta } of entries) {
      const header = batch.toString('latin1', at, batch.indexOf(0x0a, at));
      const [object, type, size] = header.split(' ');
      if (object !== meta[2] || type !== 'blob')
        throw new Error(`git cat-file --batch answered "${header}" for ${file} (${meta[2]})`);
      const start = at + header.length + 1;
      files[file] = batch.toString('utf8', start, start + Number(size));
      at = start + Number(size) + 1;
    }
    return files;
  }

  /**
   * The fields `formats` (git log's --format placeholders) give for the commit `revision` names, each
   * trimmed as `git` trims a lone field: one `git log` for them all, not one per field.
   */
  logFields(repo: string, revision: string, ...formats: string[]): string[] {
    // %x00 between the fields: no placeholder prints a NUL.
    const output = execFileSync('git', ['log', '-1', `--format=${formats.join('%x00')}`, revision, '--'], {
      cwd: repo,
      env: this.env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return output.split('\0').map((field) => field.trim());
  }

  /** Number of commits reachable from `branch`. */
  commitCount(repo: string, branch: string): number {
    return Number(this.git(repo, 'rev-list', '--count', `refs/heads/${branch}`));
  }

  /** Installs a pre-receive hook that prints `message` and declines every push. */
  declinePushes(bare: string, message: string): void {
    const hook = path.join(bare, 'hooks', 'pre-receive');
    writeFileSync(hook, `#!/bin/sh\necho "${message}" >&2\nexit 1\n`);
    chmodSync(hook, 0o755);
  }

  /**
   * Makes another writer win the race: a pre-push hook in `clone` (it runs after the publisher
   * committed, however it did, and before its push reaches the remote) pushes a commit changing
   * `file` on `branch` of `remote` from a separate clone, once or before every push.
   */
  pushForeignCommitBeforePush(
    clone: string,
    remote: string,
    branch: string,
    file: string,
    mode: 'once' | 'always',
  ): void {
    const marker = path.join(this.root, `foreign-pushed-${path.basename(clone)}`);
    const env = Object.entries(this.env)
      .map(([name, value]) => `${name}='${value}'`)
      .join(' ');
    const script = [
      mode === 'once' ? `[ -e '${marker}' ] && exit 0` : ':',
      `echo x >> '${marker}'`,
      `tmp=$(mktemp -d '${this.root}/foreign-XXXXXX')`,
      `git clone --quiet '${remote}' "$tmp" && cd "$tmp" && git checkout --quiet '${branch}'`,
      `mkdir -p "$(dirname '${file}')" && echo "foreign $(wc -l < '${marker}')" >> '${file}'`,
      `git add --all && git commit --quiet -m 'Foreign commit' && git push --quiet origin 'HEAD:refs/heads/${branch}'`,
    ].join('\n');
    const hook = path.join(clone, '.git', 'hooks', 'pre-push');
    // env -i: the hook inherits GIT_DIR and friends from the outer push. It reads nothing from stdin.
    writeFileSync(hook, `#!/bin/sh\nexec env -i ${env} sh -e -c '${script.replaceAll("'", "'\\''")}'\n`);
    chmodSync(hook, 0o755);
  }

  /** How many foreign commits the pre-push hook made. */
  foreignPushes(clone: string): number {
    const marker = path.join(this.root, `foreign-pushed-${path.basename(clone)}`);
    return existsSync(marker) ? readFileSync(marker, 'utf8').split('\n').filter(Boolean).length : 0;
  }

  cleanup(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** A path as `git fast-import` reads it: C-quoted when it holds a quote, a backslash or a line break. */
function fastImportPath(file: string): string {
  return /["\\\n]/.test(file) || file.startsWith('"')
    ? `"${file.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`
    : file;
}
