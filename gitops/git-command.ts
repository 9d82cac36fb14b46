// Runs git in one directory through simple-git with a controlled environment: our identity, no
// prompts, English messages we can classify, literal pathspecs, the token (if any) as config passed
// through the environment, and every failure turned into a PublishError with the token scrubbed.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { simpleGit, type SimpleGit } from 'simple-git';
import { ENVIRONMENT } from '../src/config.js';
import { PublishError, type PublishErrorKind } from './publish-error.js';
import { scrubSecret, tokenConfig } from './git-remote.js';

export interface GitIdentity {
  name: string;
  email: string;
}

export interface GitCommandOptions {
  author: GitIdentity;
  /** Sent as an HTTP Authorization header; only give it for HTTP(S) remotes. */
  token?: string;
  /** The environment git starts from (proxies, CA bundles, HOME); empty when not given. */
  env?: Readonly<Record<string, string | undefined>>;
  /** A git process that prints nothing for this long is killed (a remote that hangs or trickles). Default 5 min. */
  idleTimeoutMs?: number;
}

/** Where a Git target is and how it is reached: what the publisher and the history reader share. */
export interface GitTargetOptions {
  /** A local path or a URL (file, http(s), ssh), as `--git` takes it. */
  repository: string;
  branch: string;
  /** The subdirectory the tree lives in; '' is the repository root. */
  path: string;
  /** This reader's or writer's own clone or mirror (created on first use). */
  workDir: string;
  author: GitIdentity;
  /** For HTTP(S) remotes; sent as a Basic auth header, never stored. */
  token?: string;
  /**
   * The environment git runs with (proxies, CA bundles, HOME for ~/.gitconfig and SSH keys); the
   * CLI passes its own. GIT_* variables other than transport settings are dropped. Default: empty.
   */
  env?: Readonly<Record<string, string | undefined>>;
}

/** How long a git process may go without output before it counts as hung (fetch and push print nothing while they wait). */
const DEFAULT_GIT_IDLE_TIMEOUT_MS = 5 * 60_000;

// git variables from the caller's environment that configure transport, not repository state.
// Everything else named GIT_* (GIT_DIR from a hook, GIT_AUTHOR_*, GIT_CONFIG_*) would redirect or
// override what we do, so it is dropped.
const TRANSPORT_GIT_VARIABLES = new Set(['GIT_SSL_CAINFO', 'GIT_SSL_CAPATH', 'GIT_SSL_NO_VERIFY', 'GIT_SSH', 'GIT_SSH_COMMAND', 'GIT_SSH_VARIANT', 'GIT_HTTP_USER_AGENT']);
// We never open an editor or pager, and simple-git refuses to run with these set.
const DROPPED_VARIABLES = new Set(['EDITOR', 'VISUAL', 'PAGER', 'PREFIX', 'SSH_ASKPASS']);

function gitEnvironment(options: GitCommandOptions): { env: Record<string, string>; usesSsh: boolean } {
  const env: Record<string, string> = {};
  let usesSsh = false;
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) continue;
    const upper = name.toUpperCase();
    if (DROPPED_VARIABLES.has(upper)) continue;
    if (upper.startsWith('GIT_') && !TRANSPORT_GIT_VARIABLES.has(upper)) continue;
    if (upper === 'GIT_SSH' || upper === 'GIT_SSH_COMMAND') usesSsh = true;
    env[name] = value;
  }
  Object.assign(env, { GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C', LANGUAGE: 'C', GIT_LITERAL_PATHSPECS: '1' });
  // Config through the environment (git >= 2.31) stays out of argv, where other users could read it.
  const entries = Object.entries(options.token === undefined ? {} : tokenConfig(options.token));
  if (entries.length > 0) {
    env.GIT_CONFIG_COUNT = String(entries.length);
    entries.forEach(([key, value], index) => {
      env[`GIT_CONFIG_KEY_${index}`] = key;
      env[`GIT_CONFIG_VALUE_${index}`] = value;
    });
  }
  return { env, usesSsh };
}

// A push that raced another one: refused as non-fast-forward, or (when both reached the server at
// once) the ref moved between the advertisement and the update.
// `stale info`: a push with --force-with-lease found the branch elsewhere than the commit it builds on.
const CONFLICT = /\[rejected\][^\n]*\((fetch first|non-fast-forward|stale info)\)|cannot lock ref '[^']*': is at [0-9a-f]+ but expected/;
const AUTH = /Authentication failed|could not read (Username|Password)|terminal prompts disabled|requested URL returned error: 40[13]|Permission denied \(publickey|Permission to \S+ denied|Access denied|not authorized/i;
const REMOTE_REJECTED = /\[remote rejected\]|protected branch|pre-receive hook declined/i;
const UNAVAILABLE = /Could not resolve host|Failed to connect|Connection refused|Connection timed out|Operation timed out|unable to access|early EOF|remote end hung up|requested URL returned error: 5\d\d|Could not read from remote repository/i;

/** Decides from git's (English) output what kind of failure this is. */
function classifyGitFailure(output: string): PublishErrorKind {
  if (CONFLICT.test(output)) return 'conflict';
  if (AUTH.test(output)) return 'auth';
  if (REMOTE_REJECTED.test(output)) return 'rejected';
  if (UNAVAILABLE.test(output)) return 'unavailable';
  return 'rejected';
}

/** What to do about a git lock file someone else holds (git's own advice, naming the file). */
export function heldGitLockAdvice(file: string): string {
  return `${file} exists: another git process is running in this repository; wait for it, or remove ${file} if none is (a crashed git process leaves it behind)`;
}

// git refusing to start because another process holds one of its lock files.
const HELD_LOCK = /Unable to create '([^']+\.lock)': File exists/;

/** True when the error is the operating system not finding the program to start (ENOENT from spawn). */
function isProgramMissing(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (code === 'ENOENT') return true;
  return /\bspawn \S*git ENOENT\b/.test(String((error as Error | undefined)?.message ?? error));
}

const HINTS: Partial<Record<PublishErrorKind, string>> = {
  auth: `; check that the Git token (${ENVIRONMENT.gitToken}) is set and may push to this repository`,
};

/** A git invocation bound to one directory. */
export class GitCommand {
  private readonly git: SimpleGit;
  /** The same git, for commands whose failure may print nothing (a hook that exits 1 silently). */
  private readonly strictGit: SimpleGit;
  private readonly token: string | undefined;
  private readonly idleTimeoutMs: number;
  private readonly baseDir: string;
  private readonly env: Record<string, string>;
  private readonly config: string[];

  constructor(baseDir: string, options: GitCommandOptions) {
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_GIT_IDLE_TIMEOUT_MS;
    const { env, usesSsh } = gitEnvironment(options);
    this.token = options.token;
    this.baseDir = baseDir;
    this.env = env;
    // Identity never comes from the environment: these go before the command as `-c`.
    this.config = [`user.name=${options.author.name}`, `user.email=${options.author.email}`, 'core.autocrlf=false', 'core.quotePath=false'];
    const settings = {
      baseDir,
      maxConcurrentProcesses: 1,
      // simple-git passes these as `-c` before the command.
      config: this.config,
      unsafe: { allowUnsafeConfigEnvCount: true, allowUnsafeSshCommand: usesSsh },
      // simple-git kills the process when it has been silent this long: a remote that accepts the
      // connection and then hangs or trickles fails the run instead of holding it (and its lock).
      timeout: { block: this.idleTimeoutMs },
    };
    this.git = simpleGit(settings).env(env);
    this.strictGit = simpleGit({
      ...settings,
      // simple-git counts a non-zero exit as success when git printed nothing on stderr.
      errors: (error, result) => {
        if (error !== undefined || result.exitCode === 0) return error;
        const printed = Buffer.concat([...result.stdErr, ...result.stdOut]);
        return printed.toString('utf8').trim() === '' ? Buffer.from(`exited with status ${result.exitCode}, printing nothing`) : printed;
      },
    }).env(env);
  }

  /** Runs git and returns its standard output; `action` names the step in error messages. */
  async run(args: string[], action: string): Promise<string> {
    try {
      return await this.git.raw(args);
    } catch (error) {
      throw this.failure(error, action);
    }
  }

  /** `run`, for a command that may fail without printing anything (`git commit` behind a hook): any non-zero exit throws. */
  async runStrict(args: string[], action: string): Promise<string> {
    try {
      return await this.strictGit.raw(args);
    } catch (error) {
      throw this.failure(error, action);
    }
  }

  /** Runs `git show` and returns the raw bytes (blob contents are not text until we say so). */
  async showBytes(args: string[], action: string): Promise<Buffer> {
    try {
      return await this.git.showBuffer(args);
    } catch (error) {
      throw this.failure(error, action);
    }
  }

  /**
   * Runs a local git command that reads `input` on its standard input (`git fast-import`), and
   * returns its standard output. The input is written piece by piece as git takes it, never held
   * whole. Same environment and configuration as `run`; killed when it takes longer than the idle
   * limit in all (it talks to no remote, so it never waits on one).
   */
  async runWithInput(args: string[], input: Iterable<Buffer>, action: string): Promise<string> {
    const child = spawn('git', [...this.config.flatMap((entry) => ['-c', entry]), ...args], { cwd: this.baseDir, env: this.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), this.idleTimeoutMs);
    const exited = new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', resolve);
    });
    // A git that exits early closes its input: the exit code is what reports it.
    let inputClosed = false;
    child.stdin.on('error', () => (inputClosed = true));
    child.stdin.on('close', () => (inputClosed = true));
    const write = async (chunk: Buffer): Promise<void> => {
      if (inputClosed || child.stdin.write(chunk)) return;
      // Whichever comes first removes the other: a big import waits for drain thousands of times,
      // and a `close` listener left behind each time piles up on the one stdin (Node warns at 11).
      await new Promise<void>((resolve) => {
        const done = (): void => {
          child.stdin.off('drain', done);
          child.stdin.off('close', done);
          resolve();
        };
        child.stdin.once('drain', done);
        child.stdin.once('close', done);
      });
    };
    try {
      // Small pieces go out together, 64 KiB at a time.
      let pending: Buffer[] = [];
      let size = 0;
      for (const piece of input) {
        pending.push(piece);
        size += piece.length;
        if (size < 65_536) continue;
        await write(Buffer.concat(pending));
        [pending, size] = [[], 0];
      }
      if (size > 0) await write(Buffer.concat(pending));
      child.stdin.end();
      const code = await exited;
      if (code !== 0) throw new Error(Buffer.concat(stderr).toString('utf8') || `git ${args[0]} exited with ${code}`);
      return Buffer.concat(stdout).toString('utf8');
    } catch (error) {
      throw this.failure(error, action);
    } finally {
      clearTimeout(timer);
    }
  }

  private failure(error: unknown, action: string): PublishError {
    // Node's spawn error carries internal stack frames: say what is missing instead.
    // (spawn says ENOENT for a missing working directory too.)
    if (isProgramMissing(error)) {
      return existsSync(this.baseDir) ? gitNotFound(action, this.env.PATH) : new PublishError('unavailable', `${action} failed: the directory ${this.baseDir} no longer exists`);
    }
    // git pads `remote:` lines with spaces; keep the text, drop the padding.
    const text = String((error as Error | undefined)?.message ?? error).split('\n').map((line) => line.trimEnd()).join('\n').trim();
    const output = scrubSecret(text, this.token);
    // simple-git's silence limit: the remote hung; trying again later may work.
    if (/^block timeout reached/i.test(text)) {
      return new PublishError('unavailable', `${action} failed: git printed nothing for ${Math.round(this.idleTimeoutMs / 1000)} s and was stopped; the remote does not answer`);
    }
    const lock = HELD_LOCK.exec(output);
    if (lock) return new PublishError('unavailable', `${action} failed: ${heldGitLockAdvice(lock[1]!)}`);
    const kind = classifyGitFailure(output);
    return new PublishError(kind, `${action} failed: ${output}${HINTS[kind] ?? ''}`);
  }
}

function gitNotFound(action: string, searched: string | undefined): PublishError {
  return new PublishError('missing-tool', `git not found: ${action} needs the git command, and there is none on PATH (${searched ?? 'PATH is not set'}); install git, or put it on PATH`);
}

/**
 * Resolves when git can be started with `env` (its PATH); otherwise throws the 'missing-tool'
 * PublishError every git command would: for a long-running process to refuse at start.
 */
export async function checkGitAvailable(env: Readonly<Record<string, string | undefined>>, action: string): Promise<void> {
  const { env: gitEnv } = gitEnvironment({ author: { name: 'clusterstack', email: 'clusterstack@localhost' }, env });
  await new Promise<void>((resolve, reject) => {
    const child = spawn('git', ['--version'], { env: gitEnv, stdio: 'ignore' });
    child.on('error', (error) => reject(isProgramMissing(error) ? gitNotFound(action, gitEnv.PATH) : error));
    child.on('close', () => resolve());
  });
}
