// Runs git in one directory through the process runner with a controlled environment: our identity, no
// prompts, English messages we can classify, literal pathspecs, the token (if any) as config passed
// through the environment, and every failure turned into a PublishError with the token scrubbed.
// A busy process starts git from its process spawner (src/core/process-spawner.ts), as it does helm:
// a publish runs many git processes, and a direct fork costs time that grows with this process's heap.
import { existsSync } from 'node:fs';
import { ENVIRONMENT } from '../src/config.js';
import { type ProcessSpawner, processSpawner } from '../src/core/process-spawner.js';
import { RankedSlots } from '../src/core/ranked-slots.js';
import { ProcessError, runProcess, type ProcessResult, type RunProcessOptions } from '../src/core/run-process.js';
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
  /** Starts git (default: this process's spawner, which starts children directly until the process is large). */
  spawner?: ProcessSpawner;
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
const TRANSPORT_GIT_VARIABLES = new Set([
  'GIT_SSL_CAINFO',
  'GIT_SSL_CAPATH',
  'GIT_SSL_NO_VERIFY',
  'GIT_SSH',
  'GIT_SSH_COMMAND',
  'GIT_SSH_VARIANT',
  'GIT_HTTP_USER_AGENT',
]);
// We never open an editor, pager or password prompt.
const DROPPED_VARIABLES = new Set(['EDITOR', 'VISUAL', 'PAGER', 'PREFIX', 'SSH_ASKPASS']);

function gitEnvironment(options: GitCommandOptions): { env: Record<string, string> } {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) continue;
    const upper = name.toUpperCase();
    if (DROPPED_VARIABLES.has(upper)) continue;
    if (upper.startsWith('GIT_') && !TRANSPORT_GIT_VARIABLES.has(upper)) continue;
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
  return { env };
}

// A push that raced another one: refused as non-fast-forward, or (when both reached the server at
// once) the ref moved between the advertisement and the update, or, on a remote without the branch
// yet (two shards' first publish), another push created it in between (`reference already exists`).
// `stale info`: a push with --force-with-lease found the branch elsewhere than the commit it builds on.
const CONFLICT =
  /\[rejected\][^\n]*\((fetch first|non-fast-forward|stale info)\)|cannot lock ref '[^']*': (is at [0-9a-f]+ but expected|reference already exists)/;
const AUTH =
  /Authentication failed|could not read (Username|Password)|terminal prompts disabled|requested URL returned error: 40[13]|Permission denied \(publickey|Permission to \S+ denied|Access denied|not authorized/i;
const REMOTE_REJECTED = /\[remote rejected\]|protected branch|pre-receive hook declined/i;
const UNAVAILABLE =
  /Could not resolve host|Failed to connect|Connection refused|Connection timed out|Operation timed out|unable to access|early EOF|remote end hung up|requested URL returned error: 5\d\d|Could not read from remote repository/i;

/** Decides from git's (English) output what kind of failure this is. */
function classifyGitFailure(output: string): PublishErrorKind {
  if (CONFLICT.test(output)) return 'conflict';
  if (AUTH.test(output)) return 'auth';
  if (REMOTE_REJECTED.test(output)) return 'rejected';
  if (UNAVAILABLE.test(output)) return 'unavailable';
  return 'rejected';
}

/** Whether `error` is a fetch's refusal because the remote has no `ref` (a new branch, an empty repository): an answer, not a failure. */
export function isMissingRemoteRef(error: unknown, ref: string): boolean {
  return error instanceof PublishError && error.message.includes(`couldn't find remote ref ${ref}`);
}

/** What to do about a git lock file someone else holds (git's own advice, naming the file). */
export function heldGitLockAdvice(file: string): string {
  return `${file} exists: another git process is running in this repository; wait for it, or remove ${file} if none is (a crashed git process leaves it behind)`;
}

// git refusing to start because another process holds one of its lock files.
const HELD_LOCK = /Unable to create '([^']+\.lock)': File exists/;

const HINTS: Partial<Record<PublishErrorKind, string>> = {
  auth: `; check that the Git token (${ENVIRONMENT.gitToken}) is set and may push to this repository`,
};

/** A git invocation bound to one directory. */
export class GitCommand {
  private readonly token: string | undefined;
  private readonly idleTimeoutMs: number;
  private readonly baseDir: string;
  private readonly env: Record<string, string>;
  private readonly config: string[];
  private readonly spawner: ProcessSpawner;
  // One git process at a time in this directory: two would fight over its index and ref locks.
  private readonly slot = new RankedSlots(1);

  constructor(baseDir: string, options: GitCommandOptions) {
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_GIT_IDLE_TIMEOUT_MS;
    this.token = options.token;
    this.baseDir = baseDir;
    this.env = gitEnvironment(options).env;
    this.spawner = options.spawner ?? processSpawner();
    // Identity never comes from the environment: these go before the command as `-c`.
    this.config = [
      `user.name=${options.author.name}`,
      `user.email=${options.author.email}`,
      'core.autocrlf=false',
      'core.quotePath=false',
    ];
  }

  /**
   * Runs git and returns its standard output; `action` names the step in error messages. A
   * non-zero exit that prints nothing on stderr counts as an answer (`git diff --quiet`, `git
   * rev-parse --verify -q`), whose output the caller reads.
   */
  async run(args: string[], action: string): Promise<string> {
    return (await this.lenient(args, action)).toString('utf8');
  }

  /** `run`, for a command that may fail without printing anything (`git commit` behind a hook): any non-zero exit throws. */
  async runStrict(args: string[], action: string): Promise<string> {
    const result = await this.spawn(args, action, { idleTimeoutMs: this.idleTimeoutMs });
    if (result.exitCode === 0) return result.stdout.toString('utf8');
    const printed = Buffer.concat([result.stderr, result.stdout]).toString('utf8');
    throw this.failure(
      printed.trim() === '' ? `exited with status ${result.exitCode}, printing nothing` : printed,
      action,
    );
  }

  /** Runs `git show` and returns the raw bytes (blob contents are not text until we say so). */
  async showBytes(args: string[], action: string): Promise<Buffer> {
    return this.lenient(['show', ...args], action);
  }

  /**
   * Runs a local git command that reads `input` on its standard input (`git fast-import`), and
   * returns its standard output. The input is written piece by piece as git takes it, never held
   * whole. Same environment and configuration as `run`; killed when it takes longer than the idle
   * limit in all (it talks to no remote, so it never waits on one).
   */
  async runWithInput(args: string[], input: Iterable<Buffer>, action: string): Promise<string> {
    const result = await this.spawn(args, action, { timeoutMs: this.idleTimeoutMs, input }, false);
    if (result.exitCode !== 0)
      throw this.failure(result.stderr.toString('utf8') || `git ${args[0]} exited with ${result.exitCode}`, action);
    return result.stdout.toString('utf8');
  }

  /**
   * Runs a local git command that reads `input` (`git cat-file --batch`) and returns its standard
   * output as bytes (object contents are not text until the caller says so); any non-zero exit throws.
   */
  async runWithInputBytes(args: string[], input: string, action: string): Promise<Buffer> {
    const result = await this.spawn(args, action, { idleTimeoutMs: this.idleTimeoutMs, input });
    if (result.exitCode !== 0)
      throw this.failure(result.stderr.toString('utf8') || `git ${args[0]} exited with ${result.exitCode}`, action);
    return result.stdout;
  }

  /** Standard output; a non-zero exit fails only with something on stderr (stdout and stderr then say why). */
  private async lenient(args: string[], action: string): Promise<Buffer> {
    const result = await this.spawn(args, action, { idleTimeoutMs: this.idleTimeoutMs });
    if (result.exitCode !== 0 && result.stderr.length > 0)
      throw this.failure(Buffer.concat([result.stdout, result.stderr]).toString('utf8'), action);
    return result.stdout;
  }

  /** One git process with our configuration before `args`; a process that cannot run becomes a PublishError. */
  private async spawn(
    args: string[],
    action: string,
    limits: Pick<RunProcessOptions, 'idleTimeoutMs' | 'timeoutMs' | 'input'>,
    serialized = true,
  ): Promise<ProcessResult> {
    const start = (): Promise<ProcessResult> =>
      runProcess('git', [...this.config.flatMap((entry) => ['-c', entry]), ...args], {
        cwd: this.baseDir,
        env: this.env,
        start: this.spawner.start,
        ...limits,
      });
    try {
      return await (serialized ? this.slot.run(0, start) : start());
    } catch (error) {
      throw this.failure(error, action);
    }
  }

  private failure(error: unknown, action: string): PublishError {
    if (error instanceof PublishError) return error;
    if (error instanceof ProcessError) {
      // (spawn says ENOENT for a missing working directory too.)
      if (error.reason === 'not-started' && error.code === 'ENOENT') {
        return existsSync(this.baseDir)
          ? gitNotFound(action, this.env.PATH)
          : new PublishError('unavailable', `${action} failed: the directory ${this.baseDir} no longer exists`);
      }
      // The silence limit: the remote hung; trying again later may work.
      if (error.reason === 'idle')
        return new PublishError(
          'unavailable',
          `${action} failed: git printed nothing for ${Math.round(this.idleTimeoutMs / 1000)} s and was stopped; the remote does not answer`,
        );
      // The spawner that started git went away mid-run: trying the step again may work.
      if (error.reason === 'lost') return new PublishError('unavailable', `${action} failed: ${error.message}`);
    }
    // git pads `remote:` lines with spaces; keep the text, drop the padding.
    const text = String((error as Error | undefined)?.message ?? error)
      .split('\n')
      .map((line) => line.trimEnd())
      .join('\n')
      .trim();
    const output = scrubSecret(text, this.token);
    const lock = HELD_LOCK.exec(output);
    if (lock) return new PublishError('unavailable', `${action} failed: ${heldGitLockAdvice(lock[1]!)}`);
    const kind = classifyGitFailure(output);
    return new PublishError(kind, `${action} failed: ${output}${HINTS[kind] ?? ''}`);
  }
}

function gitNotFound(action: string, searched: string | undefined): PublishError {
  return new PublishError(
    'missing-tool',
    `git not found: ${action} needs the git command, and there is none on PATH (${searched ?? 'PATH is not set'}); install git, or put it on PATH`,
  );
}

/**
 * Resolves when git can be started with `env` (its PATH); otherwise throws the 'missing-tool'
 * PublishError every git command would: for a long-running process to refuse at start.
 */
export async function checkGitAvailable(
  env: Readonly<Record<string, string | undefined>>,
  action: string,
): Promise<void> {
  const { env: gitEnv } = gitEnvironment({ author: { name: 'clusterstack', email: 'clusterstack@localhost' }, env });
  try {
    await runProcess('git', ['--version'], { env: gitEnv });
  } catch (error) {
    throw error instanceof ProcessError && error.reason === 'not-started' && error.code === 'ENOENT'
      ? gitNotFound(action, gitEnv.PATH)
      : error;
  }
}
