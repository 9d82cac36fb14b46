// A ClusterStack's status: which releases it keeps and why, which are usable, the newest, and two
// conditions (ReleasesResolved, Ready) that say what is wrong and what to do.
import {
  type ClusterStack,
  type ClusterStackReleaseSummary,
  type ClusterStackStatus,
  type Condition,
  withSpecDefaults,
} from '../../api/types.js';
import { loadedRelease } from '../../plan/build-plan.js';
import { reasonFor } from '../../core/failure.js';
import { formatProblem } from '../../core/problem.js';
import type { StackResolution } from '../../release/resolve-releases.js';
import { falseCondition, mergeConditions, trueCondition, type DesiredCondition } from './conditions.js';
import { clustersUsingStack, deletionBlockedMessage } from './deletion.js';
import { eventOnFailure, type EventIntent } from './event-intents.js';
import { FINALIZER, keyOf } from './owned-objects.js';
import { providerTemplateOf, unservedProviderKind } from './provider-release-state.js';
import { releaseDir, type StatusInputs } from './status-inputs.js';

const RELEASES_RESOLVED = 'ReleasesResolved';

export interface DesiredStack {
  live: ClusterStack;
  status: ClusterStackStatus;
  /** ensure: add our finalizer; remove: deletion may proceed; keep: leave finalizers as they are. */
  finalizer: 'ensure' | 'remove' | 'keep';
}

export interface StackChanges {
  stacks: DesiredStack[];
  events: EventIntent[];
}

function resolvedCondition(
  input: StatusInputs,
  stack: ClusterStack,
  resolution: StackResolution | undefined,
): DesiredCondition {
  const issue = input.stackIssues.get(keyOf(stack));
  if (issue?.reason === 'InvalidSpec') {
    return falseCondition(
      RELEASES_RESOLVED,
      'InvalidSpec',
      `the spec has ${issue.problems.length} problem${issue.problems.length === 1 ? '' : 's'}: ${issue.problems.join('; ')}. Fix the ClusterStack; ${issue.fallback ? 'until then its last valid spec is rendered' : issue.keptPublished ? 'until then its published manifests stay in place, withheld' : 'nothing is rendered for it until then'}`,
      'Error',
    );
  }
  if (issue?.reason === 'ReleaseSourceUnavailable') {
    return falseCondition(
      RELEASES_RESOLVED,
      'ReleaseSourceUnavailable',
      `${issue.problems.join('; ')}; ${issue.fallback ? 'the last listing is used meanwhile' : 'the releases published before stay in place, withheld, until it answers'}; everything else is published as usual, and the controller retries this source with backoff`,
      'Warning',
    );
  }
  if (issue?.reason === 'ReleaseSourceFailed') {
    return falseCondition(
      RELEASES_RESOLVED,
      'ReleaseSourceFailed',
      `${issue.problems.join('; ')}; ${issue.fallback ? 'the last listing is used meanwhile' : 'the releases published before stay in place, withheld'}; retrying alone will not help: fix spec.source (or the controller's credentials), the controller lists it again when the ClusterStack changes and at every resync`,
      'Error',
    );
  }
  if (!resolution)
    return falseCondition(
      RELEASES_RESOLVED,
      'ReleaseSourceUnavailable',
      'the releases could not be listed yet; the controller retries with backoff',
      'Warning',
    );
  if (resolution.problems.length > 0) {
    return falseCondition(
      RELEASES_RESOLVED,
      'ReleasesNotFound',
      resolution.problems.map((problem) => `${problem.path ? `${problem.path} ` : ''}${problem.message}`).join('; '),
      'Error',
    );
  }
  const kept = resolution.releases.filter((release) => release.kept);
  if (kept.length === 0)
    return trueCondition(RELEASES_RESOLVED, 'NoReleasesKept', resolution.notes.join('; ') || 'no release is kept');
  return trueCondition(
    RELEASES_RESOLVED,
    'ReleasesResolved',
    `keeps ${kept.map((release) => `${release.name} (${release.reasons.join(', ')})`).join('; ')}${resolution.notes.length > 0 ? `; note: ${resolution.notes.join('; ')}` : ''}`,
  );
}

/** One summary entry per kept release, its phase following download, provider work, render and publish. */
function summaryOf(input: StatusInputs, resolution: StackResolution): ClusterStackReleaseSummary[] {
  return resolution.releases
    .filter((release) => release.kept)
    .map((release) => {
      const loaded = input.plan ? loadedRelease(input.plan, resolution.namespace, release.name) : undefined;
      const dir = releaseDir(resolution.namespace, release.name);
      const withheld = input.render?.withheld.find(
        (entry) => entry.kind === 'release' && entry.namespace === resolution.namespace && entry.name === release.name,
      );
      const rendered = input.render?.provenance.units.some((unit) => unit.dir === dir) ?? false;
      const pending = input.publish.dirtyDirs.has(dir) && input.publish.outcome !== 'published';
      let entry: ClusterStackReleaseSummary;
      if (!loaded?.content)
        entry = {
          name: release.name,
          ready: false,
          phase: 'downloading release assets',
          message: (loaded?.problems ?? []).map(formatProblem).join('; ') || 'not loaded yet',
        };
      else if (!release.ready)
        entry = {
          name: release.name,
          ready: false,
          phase: 'provider-specific work',
          message: release.readyMessage ?? 'provider work pending',
        };
      else if (withheld && !withheld.previousKept)
        entry = { name: release.name, ready: false, phase: 'rendering manifests', message: withheld.reason };
      else if (!rendered && !withheld)
        entry = {
          name: release.name,
          ready: false,
          phase: 'rendering manifests',
          message: input.renderFailure?.message ?? 'not rendered yet',
        };
      else if (pending)
        entry = {
          name: release.name,
          ready: false,
          phase: 'publishing manifests',
          message: input.publish.message ?? 'not published yet',
        };
      else entry = { name: release.name, ready: true, phase: 'done' };
      return entry;
    });
}

function readyCondition(
  input: StatusInputs,
  stack: ClusterStack,
  resolved: DesiredCondition,
  summary: ClusterStackReleaseSummary[],
  blocked: string | undefined,
): DesiredCondition {
  if (blocked) return falseCondition('Ready', 'DeletionBlocked', blocked, 'Warning');
  // A provider kind the API server does not serve is a setup problem that explains the rest.
  const unserved = unservedProviderKind(stack, input.unservedKinds);
  if (unserved) return falseCondition('Ready', 'ProviderKindNotServed', unserved, 'Error');
  const unwritten = input.ownedObjectErrors?.get(keyOf(stack));
  if (unwritten && unwritten.length > 0) {
    return falseCondition(
      'Ready',
      'OwnedObjectsNotWritten',
      `the API server refused objects this stack owns: ${unwritten.join('; ')}; the controller retries with backoff (check its RBAC and the admission webhooks)`,
      'Error',
    );
  }
  if (resolved.status !== 'True') return { ...resolved, type: 'Ready' };
  const spec = withSpecDefaults(stack.spec);
  if (!spec.noProvider && !providerTemplateOf(stack, input.live.providerTemplates)) {
    const ref = spec.providerRef;
    return falseCondition(
      'Ready',
      'ProviderTemplateNotFound',
      `spec.providerRef ${ref?.kind ?? '<kind>'} ${ref?.namespace ?? stack.metadata.namespace ?? 'default'}/${ref?.name ?? '<name>'} does not exist; create it or fix spec.providerRef`,
      'Error',
    );
  }
  const notReady = summary.filter((entry) => !entry.ready);
  const byPhase = (phase: ClusterStackReleaseSummary['phase']) => notReady.filter((entry) => entry.phase === phase);
  const describe = (entries: ClusterStackReleaseSummary[]) =>
    entries.map((entry) => `${entry.name}: ${entry.message ?? entry.phase}`).join('; ');
  if (byPhase('downloading release assets').length > 0)
    return falseCondition(
      'Ready',
      'ReleaseAssetsUnavailable',
      `${describe(byPhase('downloading release assets'))}; check the release source, the controller retries`,
      'Warning',
    );
  if (byPhase('provider-specific work').length > 0)
    return falseCondition('Ready', 'ReleasesNotReady', describe(byPhase('provider-specific work')), 'Info');
  if (byPhase('rendering manifests').length > 0)
    return falseCondition(
      'Ready',
      input.renderFailure ? reasonFor('Render', input.renderFailure.kind) : 'ReleasesWithheld',
      describe(byPhase('rendering manifests')),
      'Warning',
    );
  if (byPhase('publishing manifests').length > 0) {
    return input.publish.outcome === 'failed'
      ? falseCondition(
          'Ready',
          'PublishRetrying',
          `publishing to ${input.publish.target} failed: ${input.publish.message ?? 'unknown error'}; the previous output stays in place and the controller retries with backoff`,
          'Warning',
        )
      : falseCondition('Ready', 'PublishPending', describe(byPhase('publishing manifests')), 'Info');
  }
  if (summary.length === 0)
    return trueCondition('Ready', 'NoReleasesKept', 'no release is kept, so nothing is published for this stack');
  return trueCondition(
    'Ready',
    'Ready',
    `release${summary.length === 1 ? '' : 's'} ${summary.map((entry) => entry.name).join(', ')} published to ${input.publish.target}`,
  );
}

/** Desired status and finalizer handling of every live ClusterStack. */
export function desiredStacks(input: StatusInputs): StackChanges {
  const changes: StackChanges = { stacks: [], events: [] };
  for (const stack of input.live.stacks) {
    const key = keyOf(stack);
    const resolution = input.plan?.resolution.clusterStacks.find(
      (candidate) => `${candidate.namespace}/${candidate.name}` === key,
    );
    const deleting = Boolean(stack.metadata.deletionTimestamp);
    const hasFinalizer = (stack.metadata.finalizers ?? []).includes(FINALIZER);
    let blocked: string | undefined;
    let finalizer: DesiredStack['finalizer'] = hasFinalizer || deleting ? 'keep' : 'ensure';
    if (deleting) {
      const users = clustersUsingStack(stack, input.live.clusters);
      if (users.length > 0) blocked = deletionBlockedMessage(`ClusterStack ${key}`, users);
      else if (hasFinalizer) finalizer = 'remove';
    }
    const resolved = resolvedCondition(input, stack, resolution);
    const summary = resolution ? summaryOf(input, resolution) : (stack.status?.summary ?? []);
    const ready = readyCondition(input, stack, resolved, summary, blocked);
    const generation = stack.metadata.generation ?? 1;
    const status: ClusterStackStatus = {
      summary,
      usableVersions: resolution ? resolution.usableVersions : (stack.status?.usableVersions ?? ''),
      conditions: mergeConditions(stack.status?.conditions, [resolved, ready], input.now, generation),
      observedGeneration: generation,
    };
    const latest = resolution ? resolution.latestRelease : stack.status?.latestRelease;
    if (latest) status.latestRelease = latest;
    changes.stacks.push({ live: stack, status, finalizer });

    const before: Condition[] | undefined = stack.status?.conditions;
    const resolvedEvent = eventOnFailure(stack, before, resolved);
    if (resolvedEvent) changes.events.push(resolvedEvent);
    if (
      ready.reason === 'DeletionBlocked' ||
      ready.reason === 'PublishRetrying' ||
      ready.reason === 'ReleasesWithheld' ||
      (input.renderFailure && ready.reason === reasonFor('Render', input.renderFailure.kind))
    ) {
      const readyEvent = eventOnFailure(stack, before, ready);
      if (readyEvent) changes.events.push(readyEvent);
    }
  }
  return changes;
}
