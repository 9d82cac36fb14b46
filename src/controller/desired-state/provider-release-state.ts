// Provider mode: one <Provider>ClusterStackRelease per kept release, its spec copied from the
// stack's <Provider>ClusterStackReleaseTemplate (`spec.template.spec`), owned by the ClusterStack.
// Unstructured: any provider kind works.
import { type ClusterStack, type KubeObject, withSpecDefaults } from '../../api/types.js';
import { groupOf } from '../../inputs/classify-inputs.js';
import { namespaceOf } from '../../release/resolve-releases.js';
import { clustersUsingRelease } from './deletion.js';
import {
  controllerReference,
  isManagedByUs,
  keyOf,
  LABEL_CLUSTER_STACK,
  managedLabels,
  nameLabels,
  ownerOfKind,
} from './owned-objects.js';
import type { StatusInputs } from './status-inputs.js';

export interface DesiredProviderRelease {
  object: KubeObject;
  live?: KubeObject;
}

export interface ProviderReleaseChanges {
  releases: DesiredProviderRelease[];
  toDelete: KubeObject[];
}

/** `OpenStackClusterStackReleaseTemplate` -> `OpenStackClusterStackRelease`. */
export function providerReleaseKind(templateKind: string): string {
  return templateKind.replace(/Template$/, '');
}

/**
 * Why the API server cannot serve a provider-mode stack's template or release kind, if it cannot:
 * the provider's CRDs are missing, or spec.providerRef names a wrong apiVersion or kind.
 */
export function unservedProviderKind(
  stack: ClusterStack,
  unserved: Map<string, string> | undefined,
): string | undefined {
  const spec = withSpecDefaults(stack.spec);
  const ref = spec.providerRef;
  if (spec.noProvider || !ref?.apiVersion || !ref.kind || !unserved) return undefined;
  for (const kind of [ref.kind, providerReleaseKind(ref.kind)]) {
    const reason = unserved.get(`${ref.apiVersion}/${kind}`);
    if (reason !== undefined)
      return `${kind} (${ref.apiVersion}) is not served: ${reason}; install the provider's CustomResourceDefinitions or fix spec.providerRef.apiVersion and kind`;
  }
  return undefined;
}

/** The template a provider-mode stack references, if it exists. */
export function providerTemplateOf(stack: ClusterStack, templates: KubeObject[]): KubeObject | undefined {
  const ref = withSpecDefaults(stack.spec).providerRef;
  if (!ref?.kind || !ref.name) return undefined;
  const namespace = ref.namespace ?? namespaceOf(stack);
  return templates.find(
    (template) =>
      template.kind === ref.kind &&
      template.metadata.name === ref.name &&
      namespaceOf(template) === namespace &&
      (!ref.apiVersion || groupOf(template.apiVersion) === groupOf(ref.apiVersion)),
  );
}

function templateSpec(template: KubeObject): Record<string, unknown> {
  const spec = (template as { spec?: { template?: { spec?: unknown } } }).spec?.template?.spec;
  return typeof spec === 'object' && spec !== null && !Array.isArray(spec)
    ? structuredClone(spec as Record<string, unknown>)
    : {};
}

/** Desired provider release objects of every resolved provider-mode stack, and owned ones to delete. */
export function desiredProviderReleases(input: StatusInputs): ProviderReleaseChanges {
  const changes: ProviderReleaseChanges = { releases: [], toDelete: [] };
  for (const resolution of input.plan?.resolution.clusterStacks ?? []) {
    const stack = input.live.stacks.find(
      (candidate) => keyOf(candidate) === `${resolution.namespace}/${resolution.name}`,
    );
    if (!stack) continue;
    const spec = withSpecDefaults(resolution.stack.spec);
    if (spec.noProvider || !spec.providerRef?.kind) continue;
    const template = providerTemplateOf(resolution.stack, input.live.providerTemplates);
    const kind = providerReleaseKind(spec.providerRef.kind);
    const apiVersion = template?.apiVersion ?? spec.providerRef.apiVersion ?? '';
    const kept = new Set(resolution.releases.filter((release) => release.kept).map((release) => release.name));
    const ours = input.live.providerReleases.filter(
      (object) => object.kind === kind && namespaceOf(object) === resolution.namespace,
    );
    if (template && !stack.metadata.deletionTimestamp) {
      for (const name of kept) {
        const live = ours.find((object) => object.metadata.name === name);
        const named = nameLabels({ [LABEL_CLUSTER_STACK]: resolution.name });
        const object: KubeObject = {
          apiVersion,
          kind,
          metadata: {
            name,
            namespace: resolution.namespace,
            labels: managedLabels(named.labels),
            ...(Object.keys(named.annotations).length > 0 ? { annotations: named.annotations } : {}),
            ownerReferences: [controllerReference(stack as never)],
          },
          spec: templateSpec(template),
        };
        changes.releases.push(live ? { object, live } : { object });
      }
    }
    for (const live of ours) {
      if (kept.has(live.metadata.name) || live.metadata.deletionTimestamp) continue;
      const owner = ownerOfKind(live, 'ClusterStack');
      if (!owner || owner.uid !== stack.metadata.uid || !isManagedByUs(live)) continue;
      if (clustersUsingRelease(resolution.namespace, live.metadata.name, input.live.clusters).length > 0) continue;
      changes.toDelete.push(live);
    }
  }
  return changes;
}
