// Conditions shared by ClusterStackReleases and ClusterAddons, about one or more unit directories:
// were they published, and has the GitOps engine applied them.
import { reasonFor, type TypedFailure } from '../../core/failure.js';
import { falseCondition, trueCondition, unknownCondition, type DesiredCondition } from './conditions.js';
import type { GitOpsEngineName, PublishState } from './status-inputs.js';
import type { UnitSync } from './sync-state.js';

const MANIFESTS_PUBLISHED = 'ManifestsPublished';
export const MANIFESTS_SYNCED = 'ManifestsSynced';
export const MANIFESTS_RENDERED = 'ManifestsRendered';

/**
 * ManifestsRendered when the render failed as a whole (reading the target, a refused mass deletion,
 * a helm that cannot run): the reason and the message say what happens next, from the failure table.
 */
export function renderFailedCondition(failure: TypedFailure): DesiredCondition {
  const next = {
    'fix-input': '; the controller renders again when the inputs change',
    retry: '; the controller retries with backoff',
    wait: '; the controller renders again when it is ready',
    internal: '; this is a bug, the controller retries with backoff',
  }[failure.kind];
  return falseCondition(
    MANIFESTS_RENDERED,
    reasonFor('Render', failure.kind),
    `rendering failed: ${failure.message}${next}`,
    failure.kind === 'wait' ? 'Info' : failure.kind === 'retry' ? 'Warning' : 'Error',
  );
}

/** The newest of the revisions in which these directories last changed (by publish order). */
function latestRevision(dirs: string[], publish: PublishState): string | undefined {
  const known = dirs
    .map((dir) => publish.order.unitRevisions.get(dir))
    .filter((revision): revision is string => revision !== undefined);
  if (known.length === 0) return publish.revision ?? undefined;
  return known.sort((a, b) => publish.order.history.indexOf(a) - publish.order.history.indexOf(b)).at(-1);
}

function revisionText(publish: PublishState, revision: string | undefined): string {
  if (publish.revisionKind === 'none' || !revision) return `written to ${publish.target}`;
  return `in ${publish.target} at ${publish.revisionKind} ${revision}`;
}

/** ManifestsPublished for directories that rendered (`dirs` empty: nothing rendered to publish). */
export function publishedCondition(dirs: string[], publish: PublishState, subject: string): DesiredCondition {
  if (dirs.length === 0)
    return unknownCondition(
      MANIFESTS_PUBLISHED,
      'NotRendered',
      `nothing is published for ${subject} until its manifests render`,
    );
  const pending = dirs.some((dir) => publish.dirtyDirs.has(dir));
  if (pending && publish.outcome === 'failed') {
    return falseCondition(
      MANIFESTS_PUBLISHED,
      'PublishRetrying',
      `publishing to ${publish.target} failed: ${publish.message ?? 'unknown error'}; the previous output stays in place and the controller retries with backoff (check the Git remote, its credentials and the branch protection)`,
    );
  }
  const proposedIn = dirs.map((dir) => publish.order.pending?.get(dir)).find((where) => where !== undefined);
  if (proposedIn !== undefined && publish.outcome !== 'failed') {
    return unknownCondition(
      MANIFESTS_PUBLISHED,
      'ProposedInPullRequest',
      `${dirs.join(', ')} proposed in ${proposedIn}; the branch the GitOps engine reads holds them once it is merged`,
    );
  }
  if (pending && publish.outcome === 'skipped')
    return unknownCondition(
      MANIFESTS_PUBLISHED,
      'PublishPending',
      `not published yet: ${publish.message ?? 'waiting'}`,
    );
  if (
    publish.revision === null &&
    publish.revisionKind !== 'none' &&
    publish.outcome !== 'published' &&
    publish.outcome !== 'unchanged'
  ) {
    return unknownCondition(
      MANIFESTS_PUBLISHED,
      'PublishPending',
      `not published yet: ${publish.message ?? 'waiting for the first publish'}`,
    );
  }
  return trueCondition(
    MANIFESTS_PUBLISHED,
    'ManifestsPublished',
    `${dirs.join(', ')} ${revisionText(publish, latestRevision(dirs, publish))}`,
  );
}

const ENGINE_OBJECT: Record<'flux' | 'argocd', string> = { flux: 'Flux Kustomization', argocd: 'Argo CD Application' };

/**
 * ManifestsSynced from the engine's verdicts on the directories. With no engine configured it is
 * Unknown and does not count towards Ready (see `countsForReady`).
 */
export function syncedCondition(
  dirs: string[],
  engine: GitOpsEngineName,
  sync: Map<string, UnitSync>,
): DesiredCondition {
  if (engine === 'none') {
    return unknownCondition(
      MANIFESTS_SYNCED,
      'SyncNotTracked',
      'no GitOps engine is configured (--gitops none): apply the published manifests yourself, or run the controller with --gitops flux or --gitops argocd to see their sync state here',
    );
  }
  if (dirs.length === 0)
    return unknownCondition(MANIFESTS_SYNCED, 'NotPublished', 'nothing to sync until the manifests are published');
  const verdicts = dirs.map((dir) => ({ dir, verdict: sync.get(dir) }));
  const missing = verdicts.filter((entry) => !entry.verdict).map((entry) => entry.dir);
  const failed = verdicts.filter((entry) => entry.verdict?.state === 'failed');
  const drifted = verdicts.filter((entry) => entry.verdict?.state === 'out-of-sync');
  const progressing = verdicts.filter((entry) => entry.verdict?.state === 'progressing');
  if (failed.length > 0)
    return falseCondition(
      MANIFESTS_SYNCED,
      'SyncFailed',
      failed.map((entry) => entry.verdict!.message).join('; '),
      'Error',
    );
  if (drifted.length > 0)
    return falseCondition(
      MANIFESTS_SYNCED,
      'OutOfSync',
      drifted.map((entry) => entry.verdict!.message).join('; '),
      'Warning',
    );
  if (missing.length > 0) {
    return unknownCondition(
      MANIFESTS_SYNCED,
      'WaitingForGitOps',
      `no ${ENGINE_OBJECT[engine]} has a path ending in ${missing.join(', ')}; apply the generated ${engine === 'flux' ? 'flux/' : 'argocd/'} wiring or create one pointing at ${missing.length === 1 ? 'that directory' : 'those directories'}`,
    );
  }
  if (progressing.length > 0)
    return falseCondition(
      MANIFESTS_SYNCED,
      'Progressing',
      progressing.map((entry) => entry.verdict!.message).join('; '),
      'Info',
    );
  const sources = [...new Set(verdicts.map((entry) => entry.verdict!.message))];
  return trueCondition(MANIFESTS_SYNCED, 'Synced', sources.join('; '));
}

/** Whether ManifestsSynced takes part in Ready (only when an engine reports back). */
export function countsForReady(engine: GitOpsEngineName): boolean {
  return engine !== 'none';
}
