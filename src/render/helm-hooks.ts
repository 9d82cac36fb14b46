// Helm hooks, laid out for the engine that applies the tree. `helm template` prints hook objects
// (annotation `helm.sh/hook`) beside the chart's own, but helm runs them only at their events: at
// install and upgrade before the chart's objects (pre-*) or once they are ready (post-*), and the
// rest only on delete, rollback or `helm test`. Written as ordinary objects they would all run at
// install: Kyverno's pre-delete Job scales Kyverno to zero, test Pods start with the addon.
//
// - an engine that maps hooks to its own phases (Argo CD; its HookPhases come from gitops/wiring):
//   every hook stays in the unit's directory with its annotations, and what the engine does is
//   recorded from its mapping.
// - `staged` (Flux, or no engine): pre-install/pre-upgrade hooks go to `helm-hooks/pre-w<weight>/`,
//   post-install/post-upgrade hooks to `helm-hooks/post-w<weight>/`, one directory per weight so the
//   wiring can apply them in helm's order (lower weight first, each waited for); the unit's own
//   kustomization lists neither. A hook of both phases (ingress-nginx's webhook RBAC: helm creates it
//   for the pre phase and again for the post phase) goes to the first. Hooks helm runs only on
//   delete, rollback or test are left out; so are hooks with an event helm does not know (helm
//   skips those objects itself). Delete policies are not emulated: an applier that deletes a
//   finished Job would find it missing and apply it again, so hooks stay once they ran; a changed
//   hook is replaced (Flux's `force`), which is what `before-hook-creation` asks for.
import type { KubeObject } from '../api/types.js';
import type { HookPhases } from '../core/engine-rules.js';
import type { HelmHookRecord, HookDecision, HookPlacement } from '../output/helm-hooks-record.js';
import { helmHookDir } from '../output/tree-layout.js';
import { fileNamesFor } from './manifest-objects.js';

export const HELM_HOOK_ANNOTATION = 'helm.sh/hook';
const HELM_HOOK_WEIGHT_ANNOTATION = 'helm.sh/hook-weight';
const HELM_HOOK_DELETE_POLICY_ANNOTATION = 'helm.sh/hook-delete-policy';

/** The events helm 3 and 4 know (pkg/release hook events; the manifest sorter takes `test-success` as `test`). */
const HELM_EVENTS = new Set([
  'pre-install',
  'post-install',
  'pre-delete',
  'post-delete',
  'pre-upgrade',
  'post-upgrade',
  'pre-rollback',
  'post-rollback',
  'test',
  'test-success',
]);
const BEFORE_EVENTS = ['pre-install', 'pre-upgrade'];
const AFTER_EVENTS = ['post-install', 'post-upgrade'];

/** A hook as helm reads its annotations. */
export interface HelmHook {
  /** Comma-separated, each trimmed and lower-cased (helm's manifest sorter). */
  events: string[];
  /** strconv.Atoi of the weight annotation; 0 when absent or not an integer. */
  weight: number;
  deletePolicies: string[];
  /** Events helm does not know: helm skips the whole object (`helm template` does not print it). */
  unknownEvents: string[];
}

/** The hook an object declares, or undefined when it has no `helm.sh/hook` annotation. */
export function readHelmHook(object: KubeObject): HelmHook | undefined {
  const annotations = object.metadata.annotations;
  const value = annotations?.[HELM_HOOK_ANNOTATION];
  if (typeof value !== 'string') return undefined;
  const events = value.split(',').map((event) => event.trim().toLowerCase());
  const weightText = annotations?.[HELM_HOOK_WEIGHT_ANNOTATION];
  const weight = typeof weightText === 'string' && /^[+-]?\d{1,18}$/.test(weightText) ? Number(weightText) : 0;
  const policies = annotations?.[HELM_HOOK_DELETE_POLICY_ANNOTATION];
  const deletePolicies =
    typeof policies === 'string'
      ? policies
          .split(',')
          .map((policy) => policy.trim())
          .filter((policy) => policy !== '')
      : [];
  return {
    events,
    weight: Object.is(weight, -0) ? 0 : weight,
    deletePolicies,
    unknownEvents: events.filter((event) => !HELM_EVENTS.has(event)),
  };
}

export interface PlacedHooks {
  /** Per object, in the order given: its file below the unit's directory, or undefined when left out. */
  files: (string | undefined)[];
  /** One record per hook object, in the order given. */
  hooks: HelmHookRecord[];
}

/** The placement recorded for hooks laid out with `phases` (the engine's), or staged without. */
export function hookPlacementOf(phases: HookPhases | undefined): HookPlacement {
  return phases?.placement ?? 'staged';
}

/**
 * Where each object of a unit goes: with an engine's `phases`, in the unit's directory as the engine
 * maps it; without, staged. File names for the objects that are written (ordinary ones as
 * fileNamesFor names them, hooks as the placement says) and a record per hook.
 */
export function placeHelmHooks(
  objects: KubeObject[],
  defaultNamespace: string,
  phases: HookPhases | undefined,
): PlacedHooks {
  const hooks = objects.map(readHelmHook);
  if (hooks.every((hook) => hook === undefined)) return { files: fileNamesFor(objects, defaultNamespace), hooks: [] };
  const decided = objects.map((object, index) => (hooks[index] ? decide(object, hooks[index], phases) : undefined));

  // Files: per directory, named among the objects of that directory only.
  const files: (string | undefined)[] = objects.map(() => undefined);
  const byDir = new Map<string, number[]>();
  objects.forEach((_object, index) => {
    const decision = decided[index];
    if (decision?.decision === 'dropped') return;
    const dir = decision?.dir ?? '';
    byDir.set(dir, [...(byDir.get(dir) ?? []), index]);
  });
  for (const [dir, indexes] of byDir) {
    const names = fileNamesFor(
      indexes.map((index) => objects[index]!),
      defaultNamespace,
    );
    indexes.forEach((index, position) => (files[index] = dir === '' ? names[position]! : `${dir}/${names[position]!}`));
  }

  const records = objects.flatMap((object, index): HelmHookRecord[] => {
    const hook = hooks[index];
    const decision = decided[index];
    if (!hook || !decision) return [];
    const record: HelmHookRecord = {
      apiVersion: object.apiVersion,
      kind: object.kind,
      ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}),
      name: object.metadata.name,
      events: hook.events,
      weight: hook.weight,
      deletePolicies: hook.deletePolicies,
      decision: decision.decision,
      ...(files[index] !== undefined ? { file: files[index] } : {}),
      reason: decision.reason,
    };
    return [record];
  });
  return { files, hooks: records };
}

interface Decision {
  decision: HookDecision;
  /** The hook directory (staged placement), relative to the unit's. */
  dir?: string;
  reason: string;
}

function decide(object: KubeObject, hook: HelmHook, phases: HookPhases | undefined): Decision {
  const events = hook.events.join(',');
  const before = hook.events.some((event) => BEFORE_EVENTS.includes(event));
  const after = hook.events.some((event) => AFTER_EVENTS.includes(event));
  const otherEvents = hook.events.filter((event) => !BEFORE_EVENTS.includes(event) && !AFTER_EVENTS.includes(event));
  const notEmulated =
    (before || after) && otherEvents.length > 0 ? `; its ${otherEvents.join(',')} run is not emulated` : '';
  // A GitOps engine cannot tell an install from an upgrade (Argo CD maps both to one phase too).
  const upgradeOnly =
    !hook.events.includes('pre-install') && !hook.events.includes('post-install')
      ? ' (helm runs it at upgrade only; an engine cannot tell an install from an upgrade, so it also runs at install)'
      : '';
  if (phases) return decideForEngine(object, events, phases);
  if (hook.unknownEvents.length > 0) {
    return {
      decision: 'dropped',
      reason: `helm skips objects with a hook it does not know (${hook.unknownEvents.join(',')}): left out, as helm leaves it out`,
    };
  }
  const kept =
    hook.deletePolicies.length > 0
      ? ` It stays once applied (delete policy ${hook.deletePolicies.join(',')} is not emulated: a deleted hook would be applied again); a changed one is replaced.`
      : '';
  if (before) {
    return {
      decision: 'before',
      dir: helmHookDir('pre', hook.weight),
      reason: `helm runs it (${events}, weight ${hook.weight}) before the chart's objects at install and upgrade: applied before them, in weight order${upgradeOnly}${notEmulated}.${kept}`,
    };
  }
  if (after) {
    return {
      decision: 'after',
      dir: helmHookDir('post', hook.weight),
      reason: `helm runs it (${events}, weight ${hook.weight}) once the chart's objects are ready at install and upgrade: applied after them, in weight order${upgradeOnly}${notEmulated}.${kept}`,
    };
  }
  return {
    decision: 'dropped',
    reason: `helm runs it only on ${describeEvents(hook.events)} (${events}), never at install: left out`,
  };
}

/** What the engine does with a hook it is given, from its own mapping (its HookPhases). */
function decideForEngine(object: KubeObject, events: string, phases: HookPhases): Decision {
  const handling = phases.handling(object.metadata.annotations);
  const own = object.metadata.annotations?.[phases.hookAnnotation];
  const source = own !== undefined ? `the chart's ${phases.hookAnnotation} (${own})` : `helm.sh/hook ${events}`;
  const engine = phases.engine;
  if (!handling.hook && handling.syncPhases.includes('Sync'))
    return { decision: 'with-objects', reason: `${engine} applies it as an ordinary object (${source})` };
  if (handling.syncPhases.includes('PreSync'))
    return { decision: 'before', reason: `${engine} runs it as a PreSync hook, before the other objects (${source})` };
  if (handling.syncPhases.includes('Sync'))
    return { decision: 'with-objects', reason: `${engine} runs it as a Sync hook, with the other objects (${source})` };
  if (handling.syncPhases.includes('PostSync'))
    return {
      decision: 'after',
      reason: `${engine} runs it as a PostSync hook, once the other objects are healthy (${source})`,
    };
  if (handling.syncPhases.length > 0)
    return { decision: 'never', reason: `${engine} runs it only when a sync fails (${source})` };
  if (handling.types.some((type) => type === 'PreDelete' || type === 'PostDelete')) {
    return {
      decision: 'on-delete',
      reason: `${engine} never applies it in a sync; it runs it as ${handling.types.join(',')} when the Application is deleted (${source})`,
    };
  }
  return { decision: 'never', reason: `${engine} never applies it: it has no ${engine} phase for ${source}` };
}

function describeEvents(events: string[]): string {
  const kinds = new Set(
    events.map((event) =>
      event.endsWith('delete')
        ? 'delete'
        : event.endsWith('rollback')
          ? 'rollback'
          : event.startsWith('test')
            ? '`helm test`'
            : event,
    ),
  );
  return [...kinds].join(' or ');
}
