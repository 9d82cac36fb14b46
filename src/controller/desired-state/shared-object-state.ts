// What a ClusterStackRelease says about the objects it shares with other kept releases (node images
// written once in management/<ns>/shared/, see src/render/shared-objects.ts): which they are, in
// its status.resources with the sync state of the shared directory, and a SharedObjectsReady
// condition telling whether the GitOps engine has applied them. Pure: reads the render's records
// and the engine's verdicts.
import type { ResourceStatus } from '../../api/types.js';
import type { Provenance, SharedObjectRecord, UnitRecord } from '../../output/provenance.js';
import { falseCondition, trueCondition, unknownCondition, type DesiredCondition } from './conditions.js';
import type { GitOpsEngineName } from './status-inputs.js';
import type { UnitSync } from './sync-state.js';
import { resourceStatuses } from './unit-resources.js';

const SHARED_OBJECTS_READY = 'SharedObjectsReady';

/** The shared objects a release unit renders (the management side's shared directories only), by path. */
export function sharedObjectsOf(
  unit: UnitRecord | undefined,
  provenance: Provenance | undefined,
): SharedObjectRecord[] {
  if (!unit?.shared || !provenance?.sharedObjects) return [];
  const paths = new Set(Object.values(unit.shared));
  return provenance.sharedObjects.filter((shared) => paths.has(shared.path) && shared.path.startsWith('management/'));
}

/** The directory holding a shared object's copy. */
export function sharedDirOf(shared: SharedObjectRecord): string {
  return shared.path.slice(0, shared.path.lastIndexOf('/'));
}

function describe(shared: SharedObjectRecord): string {
  return `${shared.group === '' ? shared.kind : `${shared.kind}.${shared.group}`} ${shared.namespace === '' ? '' : `${shared.namespace}/`}${shared.name}`;
}

/** status.resources entries for the shared objects, with the sync state of the directory holding them. */
export function sharedResourceStatuses(shared: SharedObjectRecord[], sync: Map<string, UnitSync>): ResourceStatus[] {
  return shared.flatMap((object) =>
    resourceStatuses(
      [
        {
          group: object.group,
          version: object.version,
          kind: object.kind,
          name: object.name,
          ...(object.namespace === '' ? {} : { namespace: object.namespace }),
        },
      ],
      sync.get(sharedDirOf(object)),
    ),
  );
}

/**
 * SharedObjectsReady: True when the release shares nothing, or the engine applied every shared
 * object (for node images: Flux and Argo CD health-check them, so applied means available);
 * False (Info: it goes on by itself) while the engine is still applying or waiting for them, or
 * when it failed; Unknown when no engine is tracked or none covers the shared directory yet.
 */
export function sharedObjectsCondition(
  shared: SharedObjectRecord[],
  engine: GitOpsEngineName,
  sync: Map<string, UnitSync>,
  release: string,
): DesiredCondition {
  if (shared.length === 0)
    return trueCondition(
      SHARED_OBJECTS_READY,
      'NoSharedObjects',
      `release ${release} renders no object another kept release renders too`,
    );
  const list = shared
    .map((object) => `${describe(object)} (${object.path}, rendered by ${object.renderedBy.join(', ')})`)
    .join('; ');
  if (engine === 'none')
    return unknownCondition(
      SHARED_OBJECTS_READY,
      'SyncNotTracked',
      `uses ${shared.length} shared object${shared.length === 1 ? '' : 's'}: ${list}; no GitOps engine is configured, so their state is not tracked`,
    );
  const dirs = [...new Set(shared.map(sharedDirOf))].sort();
  const verdicts = dirs.map((dir) => ({ dir, verdict: sync.get(dir) }));
  const missing = verdicts.filter((entry) => !entry.verdict).map((entry) => entry.dir);
  if (missing.length > 0)
    return unknownCondition(
      SHARED_OBJECTS_READY,
      'WaitingForGitOps',
      `uses ${list}; nothing applies ${missing.join(', ')} yet: apply the generated ${engine === 'flux' ? 'flux/' : 'argocd/'} wiring`,
    );
  const failed = verdicts.filter((entry) => entry.verdict!.state === 'failed');
  if (failed.length > 0)
    return falseCondition(
      SHARED_OBJECTS_READY,
      'SharedObjectsFailed',
      `uses ${list}; ${failed.map((entry) => entry.verdict!.message).join('; ')}`,
      'Error',
    );
  const pending = verdicts.filter((entry) => entry.verdict!.state !== 'synced');
  if (pending.length > 0)
    return falseCondition(
      SHARED_OBJECTS_READY,
      'SharedObjectsProgressing',
      `uses ${list}; ${pending.map((entry) => entry.verdict!.message).join('; ')}`,
      'Info',
    );
  return trueCondition(
    SHARED_OBJECTS_READY,
    'SharedObjectsReady',
    `uses ${list}; applied: ${[...new Set(verdicts.map((entry) => entry.verdict!.message))].join('; ')}`,
  );
}
