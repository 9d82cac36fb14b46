// The controller's `--scheduler-config` file, read again whenever it changes. A ConfigMap volume
// changes through a symlink swap (kubelet writes a new `..<timestamp>` directory, points `..data_tmp`
// at it and renames that over `..data`; the file itself is a symlink through `..data`), so the
// directory is watched, not the file, and a slow poll catches what a watch misses (network
// filesystems, editors that replace files). A new file that is not valid never replaces a valid
// configuration: the previous one stays in effect and the problem is reported.
import { type FSWatcher, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { SchedulerSetting } from '../../cluster-requests/plan-cluster-requests.js';
import { parseSchedulerConfig, type SchedulerConfig } from '../../cluster-requests/scheduler-config.js';
import type { Logger } from '../../core/logger.js';
import { InputError } from '../../core/problem.js';

/** Where the controller takes its scheduler configuration from, each reconcile. */
export interface SchedulerSource {
  /** The configuration in effect, or why there is none that can be used. */
  current(): SchedulerSetting;
  /** Why the file as it is now is not in effect, while an earlier valid configuration is. */
  problem(): string | undefined;
  /** Calls `listener` when current() or problem() changed; returns the function that stops it. */
  watch?(listener: () => void): () => void;
}

export interface SchedulerConfigFileOptions {
  /** The file as given (messages name it so); resolved against `cwd`. */
  file: string;
  cwd: string;
  logger: Logger;
  /** Changes within this window are read once. Default 200 ms. */
  debounceMs?: number;
  /** The file is read this often even without a watch event. Default 30 s. */
  pollMs?: number;
}

function problemOf(error: unknown): string {
  if (error instanceof InputError)
    return error.problems.map((p) => `${p.path ? `${p.path}: ` : ''}${p.message}`).join('; ');
  return error instanceof Error ? error.message : String(error);
}

/** A scheduler configuration file that follows its changes (see the header). */
export class SchedulerConfigFile implements SchedulerSource {
  private readonly absolute: string;
  private text: string | undefined;
  private config: SchedulerConfig | undefined;
  private refused: string | undefined;
  private latestProblem: string | undefined;
  private readonly listeners = new Set<() => void>();
  private watcher: FSWatcher | undefined;
  private poll: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private reading: Promise<void> = Promise.resolve();

  private constructor(private readonly options: SchedulerConfigFileOptions) {
    this.absolute = path.resolve(options.cwd, options.file);
  }

  /**
   * Reads the file once. A file that cannot be read is a wrong flag: InputError, the controller
   * does not start. A file that is not valid starts the controller with the configuration
   * refused: the published requests output is kept until the file is fixed.
   */
  static async open(options: SchedulerConfigFileOptions): Promise<SchedulerConfigFile> {
    const source = new SchedulerConfigFile(options);
    let text: string;
    try {
      text = await readFile(source.absolute, 'utf8');
    } catch (error) {
      throw new InputError([
        {
          source: options.file,
          message: `--scheduler-config cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
        },
      ]);
    }
    source.accept(text);
    return source;
  }

  current(): SchedulerSetting {
    if (this.config) return { config: this.config };
    return { refused: this.refused ?? `${this.options.file} has not been read` };
  }

  problem(): string | undefined {
    return this.config ? this.latestProblem : undefined;
  }

  watch(listener: () => void): () => void {
    this.listeners.add(listener);
    if (!this.poll) this.startWatching();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stopWatching();
    };
  }

  /** Reads the file now (what a watch event or the poll does); resolves once it was taken in. */
  reload(): Promise<void> {
    this.reading = this.reading.then(async () => {
      let text: string;
      try {
        text = await readFile(this.absolute, 'utf8');
      } catch (error) {
        // Between kubelet's rename and the next event the file may be missing for a moment; a
        // file gone for good keeps the configuration in effect and says so.
        const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
        if (this.note(`${this.options.file} cannot be read (${code})`))
          for (const listener of this.listeners) listener();
        return;
      }
      if (text === this.text) return;
      this.accept(text);
      for (const listener of this.listeners) listener();
    });
    return this.reading;
  }

  private accept(text: string): void {
    this.text = text;
    try {
      const config = parseSchedulerConfig(text, this.options.file);
      const changed = this.config?.digest !== config.digest;
      this.config = config;
      this.refused = undefined;
      this.latestProblem = undefined;
      if (changed)
        this.options.logger.info(
          { file: this.options.file, digest: config.digest, purposes: [...config.purposeMappings.keys()] },
          'Scheduler configuration in effect',
        );
    } catch (error) {
      const problem = problemOf(error);
      if (this.config) {
        this.latestProblem = `${this.options.file} changed but is not valid (${problem}); the configuration read before (${this.config.digest}) stays in effect`;
        this.options.logger.error(
          { file: this.options.file, problem, inEffect: this.config.digest },
          'Scheduler configuration is not valid; the previous one stays in effect',
        );
      } else {
        this.refused = `${this.options.file}: ${problem}`;
        this.options.logger.error(
          { file: this.options.file, problem },
          'Scheduler configuration is not valid; nothing is scheduled and the published requests output is kept until it is fixed',
        );
      }
    }
  }

  /** Records a file that cannot be read; true when that is news. */
  private note(problem: string): boolean {
    const message = this.config
      ? `${problem}; the configuration read before (${this.config.digest}) stays in effect`
      : problem;
    if (message === (this.config ? this.latestProblem : this.refused)) return false;
    if (this.config) this.latestProblem = message;
    else this.refused = message;
    this.options.logger.warn(
      { file: this.options.file, problem },
      'Scheduler configuration file cannot be read; the one in effect stays',
    );
    return true;
  }

  private startWatching(): void {
    const schedule = (): void => {
      if (this.debounce) clearTimeout(this.debounce);
      this.debounce = setTimeout(() => {
        this.debounce = undefined;
        void this.reload();
      }, this.options.debounceMs ?? 200);
      this.debounce.unref?.();
    };
    try {
      // The directory: a swap of `..data` (or an editor's rename) replaces the file's inode.
      this.watcher = watch(path.dirname(this.absolute), { persistent: false }, schedule);
      this.watcher.on('error', (error) => {
        this.options.logger.warn(
          { file: this.options.file, error: error.message },
          'Watching the scheduler configuration failed; it is read on the poll',
        );
        this.watcher?.close();
        this.watcher = undefined;
      });
    } catch (error) {
      this.options.logger.warn(
        { file: this.options.file, error: (error as Error).message },
        'Cannot watch the scheduler configuration; it is read on the poll',
      );
    }
    this.poll = setInterval(schedule, this.options.pollMs ?? 30_000);
    this.poll.unref?.();
  }

  private stopWatching(): void {
    this.watcher?.close();
    this.watcher = undefined;
    if (this.poll) clearInterval(this.poll);
    this.poll = undefined;
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = undefined;
  }
}
