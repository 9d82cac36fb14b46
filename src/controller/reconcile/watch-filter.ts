// Which watch events lead to work. Every relevant event schedules the publish reconcile; a
// ClusterStack event whose generation or release source changed also schedules that stack's own
// key (listing its source). Updates that only carry status we wrote ourselves (or Cluster API's
// status churn on Clusters) are dropped by a fingerprint of the fields that matter, so our own
// writes never loop back into reconciles.
import type { ClusterStack, KubeObject } from '../../api/types.js';
import { namespaceOf } from '../../release/resolve-releases.js';
import { sourceLocationOf } from '../../plan/build-plan.js';
import { ARGO_APPLICATIONS, CLUSTER_STACKS, FLUX_KUSTOMIZATIONS } from '../desired-state/watched-kinds.js';
import { kindId, type WatchedKind, type WatchEvent } from '../runtime/runtime-contract.js';

const STACK_KEY_PREFIX = 'ClusterStack/';

/** The queue key of a ClusterStack's own work: listing its release source. */
export function stackKey(namespace: string, name: string): string {
  return `${STACK_KEY_PREFIX}${namespace}/${name}`;
}

/** The stack a stack key names, or undefined for another key. */
export function stackOfKey(key: string): { namespace: string; name: string } | undefined {
  if (!key.startsWith(STACK_KEY_PREFIX)) return undefined;
  const [namespace, name] = key.slice(STACK_KEY_PREFIX.length).split('/') as [string, string];
  return { namespace, name };
}

/** Fields of an object whose change can change the output or the status: not status writes of our own. */
function fingerprint(kind: WatchedKind, object: KubeObject): string {
  const meta = object.metadata;
  const common = { deletion: meta.deletionTimestamp ?? null, labels: meta.labels ?? null };
  if (kind.group === CLUSTER_STACKS.group) {
    return JSON.stringify({
      ...common,
      generation: meta.generation ?? null,
      finalizers: meta.finalizers ?? null,
      owners: meta.ownerReferences ?? null,
    });
  }
  if (kindId(kind) === kindId(FLUX_KUSTOMIZATIONS) || kindId(kind) === kindId(ARGO_APPLICATIONS))
    return JSON.stringify({ spec: object['spec'] ?? null, status: object['status'] ?? null });
  const annotations = Object.fromEntries(
    Object.entries(meta.annotations ?? {}).filter(
      ([key]) => key !== 'kubectl.kubernetes.io/last-applied-configuration',
    ),
  );
  const ready = (object as { status?: { ready?: unknown } }).status?.ready ?? null;
  return JSON.stringify({
    ...common,
    annotations,
    spec: object['spec'] ?? null,
    ready,
    owners: meta.ownerReferences ?? null,
  });
}

export class WatchFilter {
  private readonly seen = new Map<string, string>();
  private readonly stackSources = new Map<string, string>();

  constructor(
    private readonly options: {
      defaultSource: string;
      inScope: (object: KubeObject) => boolean;
      onDelete?: (object: KubeObject) => void;
    },
  ) {}

  /** Whether a watch event can change what we publish or report. */
  isRelevant(event: WatchEvent): boolean {
    const key = `${kindId(event.kind)}/${event.object.metadata.namespace ?? ''}/${event.object.metadata.name}`;
    if (event.type === 'delete') {
      this.seen.delete(key);
      this.options.onDelete?.(event.object);
      return true;
    }
    const print = fingerprint(event.kind, event.object);
    if (this.seen.get(key) === print) return false;
    this.seen.set(key, print);
    return true;
  }

  /**
   * The stack key to run for a watch event, when the event may change which releases the stack's
   * source offers it (a new stack, another source, a new generation), else undefined.
   */
  stackKeyFor(event: WatchEvent): string | undefined {
    if (kindId(event.kind) !== kindId(CLUSTER_STACKS) || !this.options.inScope(event.object)) return undefined;
    const key = stackKey(namespaceOf(event.object), event.object.metadata.name);
    if (event.type === 'delete') {
      this.stackSources.delete(key);
      return undefined;
    }
    const print = `${event.object.metadata.generation ?? ''}|${sourceLocationOf(event.object as unknown as ClusterStack, this.options.defaultSource)}`;
    if (this.stackSources.get(key) === print) return undefined;
    this.stackSources.set(key, print);
    return key;
  }
}
