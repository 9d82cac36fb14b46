// The one path from a plan to a published tree, taken by the CLI (`render`) and the controller
// alike: render → wire → guard → summarize → publish. Everything it touches outside comes in as a
// dependency (helm, the publisher, a logger, a metrics sink), so both drivers get the same tree, the
// same commit message and the same pull request body for the same inputs. The target's state is
// read once (PublishedState), the run decided purely (src/run-plan/decide-run.ts), then carried out.
import { renderPullRequestBody } from '../../gitops/pull-request-body.js';
import { renderWiring, type WiringOptions } from '../../gitops/wiring/render-wiring.js';
import { DEFAULT_SOPS_SECRET } from '../../gitops/wiring/sops-decryption.js';
import { checkWiringOptions } from '../../gitops/wiring/wiring-options.js';
import { Failure } from '../core/failure.js';
import { formatProblem, InputError } from '../core/problem.js';
import { checkMassDeletion, type MassDeletionPolicy, publishedUnitsOf } from '../core/mass-deletion-guard.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import type { PublishedState } from '../output/published-state.js';
import { guardProviderRemoval, providerGuardError } from '../providers/guard-providers.js';
import { type ChangeSummary, compareTrees, summarizeChanges, type TreeChanges } from '../output/tree-changes.js';
import { SOPS_CONFIG_FILE } from '../output/tree-layout.js';
import type { SchedulerSetting } from '../cluster-requests/plan-cluster-requests.js';
import type { SchedulerConfig } from '../cluster-requests/scheduler-config.js';
import type { Plan } from '../plan/build-plan.js';
import { unitFilesAhead } from '../render/assemble-tree.js';
import type { RunPlan } from '../run-plan/decide-run.js';
import { planRun, runSettings } from './plan-run.js';
import { kustomizationEncoder } from '../render/kustomization-yaml.js';
import type { RenderDependencies } from '../render/render-dependencies.js';
import { type RenderOutcome, type RenderProgress, renderOutput } from '../render/render-output.js';
import type { SecretPolicy } from '../render/secret-policy.js';
import { checkEncryptionEngine } from '../secrets/encryption-engine.js';
import type { EncryptionInput } from '../secrets/secret-encryption.js';
import { compareText } from '../core/compare-text.js';

/** The few things a run needs to say to operators (pino's signature; the CLI's prints warnings). */
interface PipelineLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** Where a run's measurements go (the controller's /metrics); optional. */
interface PipelineMetrics {
  renderDuration(seconds: number): void;
  publishDuration(seconds: number): void;
}

export interface PipelineDependencies<Published> {
  renderer: RenderDependencies;
  /** Makes the target hold the tree (a Publisher, or the controller's tracker around one). */
  publish(tree: RenderedTree, change: ChangeSummary): Promise<Published>;
  /** Hands each unit's files to the target as they are rendered, to be written ahead (Publisher.prestage). */
  prestage?(files: Iterable<readonly [string, string]>): void;
  logger: PipelineLogger;
  metrics?: PipelineMetrics;
  now?: () => number;
}

export interface PipelineOptions {
  secrets: SecretPolicy;
  /** With `secrets: 'encrypt'`: the recipients given; without them, the target's `.sops.yaml` decides. */
  encryption?: EncryptionInput;
  /** Flux or Argo CD wiring beside the tree (under flux/ or argocd/); none when absent. */
  gitops?: WiringOptions;
  readmeTemplate?: string;
  /** Propose the change as a pull request: its body is generated (from `template` when given). */
  pullRequest?: { template?: string };
  massDeletion: MassDeletionPolicy;
  /**
   * Publish ClusterProfiles and schedule ClusterRequests into Clusters (src/cluster-requests); a
   * refused configuration (controller) keeps the previous requests output.
   */
  scheduler?: SchedulerConfig | SchedulerSetting;
  onProgress?: (progress: RenderProgress) => void;
  /** Checked between rendering and publishing: an aborted run publishes nothing. */
  signal?: AbortSignal;
  /** A provider downgrade or contract mismatch: refuse the run (default) or withhold that provider alone. */
  providerGuards?: 'refuse' | 'withhold';
  /**
   * A Cluster of the inputs whose addons the target holds but that the inputs no longer make ours
   * (held-published-clusters.ts): withhold it alone, its output kept (default, the controller), or
   * refuse the run before anything renders (the CLI without --allow-partial).
   */
  heldClusters?: 'refuse' | 'withhold';
}

export type PipelineResult<Published> =
  | {
      status: 'published';
      outcome: RenderOutcome;
      tree: RenderedTree;
      changes: TreeChanges;
      change: ChangeSummary;
      published: Published;
    }
  | { status: 'aborted'; outcome: RenderOutcome; tree: RenderedTree };

/** Refused because the render would remove most of what is published (a user must confirm). */
export class MassDeletionRefusedError extends Failure {
  constructor(message: string) {
    super('fix-input', message);
    this.name = 'MassDeletionRefusedError';
  }
}

/** Each unit's files, and its directory's kustomization, handed to the target to write ahead as the unit renders. */
function prestageUnits(
  prestage: (files: Iterable<readonly [string, string]>) => void,
): (dir: string, files: ReadonlyMap<string, string>) => void {
  const encode = kustomizationEncoder();
  return (dir, files) => prestage(unitFilesAhead(dir, files, encode));
}

/**
 * Renders `plan` against `published` (what the target holds, read once by the driver:
 * readPublishedState, or the CLI's published-target.ts), adds the GitOps wiring, refuses a mass
 * deletion, summarizes the change and publishes it. Throws for failures that are not one unit's
 * own (a refused Secret, a refused mass deletion, helm missing, a publisher that throws).
 */
export async function renderAndPublish<Published>(
  inputPlan: Plan,
  published: PublishedState,
  deps: PipelineDependencies<Published>,
  options: PipelineOptions,
): Promise<PipelineResult<Published>> {
  // Bad wiring options are a user error: say so before any helm process runs.
  if (options.gitops) checkWiringOptions(options.gitops);
  if (options.secrets === 'encrypt') checkEncryptionEngine(options.gitops?.engine);
  const run = await planRun(inputPlan, published, await runSettings(options, published));
  refuseWhatThePlanRefuses(run);
  if (run.unscheduledRequests > 0)
    deps.logger.warn(
      {
        note: `${run.unscheduledRequests} ClusterRequest(s) in the inputs are not scheduled: no scheduler configuration was given (--scheduler-config)`,
      },
      'ClusterRequests not scheduled',
    );
  // Refused requests and kept clusters withhold only themselves: said, never thrown.
  for (const note of run.requests?.notes ?? []) deps.logger.warn({ note }, 'ClusterRequest withheld');
  return renderPlannedRun(run, deps, options);
}

/** Carries out a decided run: renders, guards provider removal, wires, and publishes (see renderAndPublish). */
async function renderPlannedRun<Published>(
  run: RunPlan,
  deps: PipelineDependencies<Published>,
  options: PipelineOptions,
): Promise<PipelineResult<Published>> {
  const now = deps.now ?? Date.now;
  const renderStarted = now();
  const outcome = await renderOutput(run.units, deps.renderer, {
    ...(run.requests ? { clusterRequests: run.requests.output } : {}),
    ...(run.units.settings.encryption ? { renderTime: renderStarted } : {}),
    ...(run.units.settings.encryption && options.gitops?.engine === 'flux'
      ? {
          decryptionKey: {
            secretName: options.gitops.sopsSecret ?? DEFAULT_SOPS_SECRET,
            managementNamespace: options.gitops.namespace,
          },
        }
      : {}),
    previous: run.published,
    ...(options.readmeTemplate !== undefined ? { readmeTemplate: options.readmeTemplate } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    ...(deps.prestage ? { onUnitRendered: prestageUnits(deps.prestage) } : {}),
  });
  deps.metrics?.renderDuration((now() - renderStarted) / 1000);
  for (const note of outcome.notes) deps.logger.warn({ note }, 'Rendered with a note');
  guardProviderRemoval(
    [...run.published.providers],
    outcome.provenance.providers ?? [],
    outcome.tree,
    run.plan.inputs.clusters.map((sourced) => sourced.object),
  );
  const sorted = wiredTree(outcome, run, options);
  if (options.signal?.aborted) return { status: 'aborted', outcome, tree: sorted };

  // Argo CD and Flux prune what leaves the output: a render that would take most of it away is far
  // more often a wrong input than a wish.
  const verdict = checkMassDeletion(
    publishedUnitsOf(run.published.provenance?.units),
    outcome.provenance.units,
    options.massDeletion,
  );
  if (verdict.refused)
    throw new MassDeletionRefusedError(verdict.message ?? 'the render would remove most of what is published');

  const changes = compareTrees(run.published, { tree: sorted, provenance: outcome.provenance });
  const change = summarizeChanges(changes, outcome.provenance.inputDigest);
  if (options.pullRequest)
    change.pullRequest = {
      title: change.title,
      body: renderPullRequestBody(changes, outcome.summary, options.pullRequest.template, {
        engine: options.gitops?.engine ?? 'none',
        ...(options.gitops?.engine === 'argocd' ? { argocdNamespace: options.gitops.namespace } : {}),
      }),
    };
  const publishStarted = now();
  const published = await deps.publish(sorted, change);
  deps.metrics?.publishDuration((now() - publishStarted) / 1000);
  return { status: 'published', outcome, tree: sorted, changes, change, published };
}

/** Stops the run, nothing rendered or written, for what the plan refuses: provider guards first, then held Clusters. */
function refuseWhatThePlanRefuses(run: RunPlan): void {
  if (run.refused.providers.length > 0) throw providerGuardError(run.refused.providers);
  const held = run.refused.heldClusters;
  if (held.length > 0)
    throw new InputError(
      [...held],
      `nothing was rendered or written:\n  ${held.map(formatProblem).join('\n  ')}\n(--allow-partial publishes everything else and keeps the previous output of the Clusters named here)`,
    );
}

/** The rendered tree with the wiring beside it and the user's .sops.yaml kept, sorted by path. */
function wiredTree(outcome: RenderOutcome, run: RunPlan, options: PipelineOptions): RenderedTree {
  // The wiring follows the units: a release or cluster that leaves the tree leaves the wiring too.
  const tree = new Map(outcome.tree);
  if (options.gitops)
    for (const [file, content] of renderWiring(outcome.provenance.units, options.gitops, {
      clusterRequests: run.requests !== undefined,
      ...(outcome.provenance.providers ? { providers: outcome.provenance.providers } : {}),
    }))
      tree.set(file, content);
  // The user's sops configuration at the root stays: the target holds exactly the tree otherwise.
  if (run.published.sopsConfig !== undefined) tree.set(SOPS_CONFIG_FILE, run.published.sopsConfig);
  return new Map([...tree.entries()].sort(([a], [b]) => compareText(a, b)));
}
