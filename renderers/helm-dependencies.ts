// Wires the helm seam into what the render pipeline asks for: render a chart, evaluate values
// templates. One runner (one process budget and counter) serves both.
import type { HelmTimeouts } from '../src/config.js';
import { processSpawner } from '../src/core/process-spawner.js';
import type { RenderDependencies } from '../src/render/render-dependencies.js';
import { cpuBudget } from './cpu-budget.js';
import { type HelmBinary, resolveHelmBinary } from './helm-binary.js';
import { HelmRenderer } from './helm-renderer.js';
import { HelmRunner } from './helm-runner.js';
import { evaluateValuesTemplates } from './values-template.js';

export interface HelmDependencies extends RenderDependencies {
  /** Helm processes started so far (0 until helm is first needed). */
  processesSpawned(): number;
  /**
   * Finds and checks helm now, for a caller that knows it will render: the check then runs while
   * the caller does other work. A failure is reported by the first render or evaluation, as without it.
   */
  prepare(): void;
  /** The helm in use, once it was found (undefined before, or when none was usable). */
  binary(): HelmBinary | undefined;
}

/**
 * Helm processes in flight: one per CPU this process may use (its cgroup's quota, when it has one)
 * and one more, ready to run while this process spawns the next or reads an output. Measured on 2
 * cores: the example stack's small charts render as fast with 3 as with 4; a CNI-sized chart (the
 * heavy benchmark) takes about 4% less CPU with 3 than with 4, whose extra process only competes
 * with the others.
 */
export const DEFAULT_HELM_CONCURRENCY = cpuBudget() + 1;

/**
 * Helm for the render pipeline. The binary is looked up on first use, so a render that reuses
 * every unit needs no helm at all (and does not fail where none is installed). Each helm process
 * runs under `timeouts` (DEFAULT_HELM_TIMEOUTS where absent); one that runs out withholds its unit.
 */
export function createHelmDependencies(options: {
  configured?: string;
  pathEnv?: string;
  workDir: string;
  concurrency?: number;
  timeouts?: Partial<HelmTimeouts>;
}): HelmDependencies {
  let started: Promise<{ runner: HelmRunner; renderer: HelmRenderer }> | undefined;
  let runner: HelmRunner | undefined;
  let found: HelmBinary | undefined;
  const concurrency = options.concurrency ?? DEFAULT_HELM_CONCURRENCY;
  const helm = (): Promise<{ runner: HelmRunner; renderer: HelmRenderer }> =>
    (started ??= resolveHelmBinary({
      ...(options.configured ? { configured: options.configured } : {}),
      ...(options.pathEnv ? { pathEnv: options.pathEnv } : {}),
      // Beside helm's work files: a process that renders asks `helm version` only of a helm no process asked before.
      memoDir: options.workDir,
    }).then((binary) => {
      found = binary;
      runner = new HelmRunner({
        binary: binary.path,
        workDir: options.workDir,
        ...(options.pathEnv ? { pathEnv: options.pathEnv } : {}),
        concurrency,
        ...(options.timeouts?.chartMs ? { timeoutMs: options.timeouts.chartMs } : {}),
        // Helm starts from this process's spawner, shared with git, once this one is large enough
        // for a fork to cost (src/core/process-spawner.ts); it starts with the first child past
        // that mark, so a render that reuses every unit starts none.
        spawner: processSpawner(),
      });
      return { runner, renderer: new HelmRenderer(runner) };
    }));
  return {
    processesSpawned: () => runner?.processesSpawned ?? 0,
    prepare: () => void helm().catch(() => undefined),
    binary: () => found,
    rendererName: () => (found ? `helm ${found.version}` : undefined),
    // Every slot can take a values chunk: at the start of a render nothing else waits for one.
    valuesInFlight: concurrency,
    renderChart: async (request) => (await helm()).renderer.renderChart(request),
    evaluateValues: async (items, kubeVersion) =>
      evaluateValuesTemplates(
        (await helm()).runner,
        items,
        kubeVersion,
        options.timeouts?.valuesMs ? { timeoutMs: options.timeouts.valuesMs } : {},
      ),
  };
}
