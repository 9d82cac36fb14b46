// The status the controller writes on Cluster API provider objects (the cluster-api-operator's
// kinds): `contract` and `installedVersion` as rendered into the published tree (from
// provenance.json), and conditions saying whether the provider's manifests were rendered and
// published, or why not. Pure. The spec is never written: a version resolved as "latest" lives in
// provenance.json, not in the object.
import { describeProvider } from '../../api/provider-types.js';
import type { Condition, KubeObject } from '../../api/types.js';
import { formatProblem } from '../../core/problem.js';
import { CERT_MANAGER_DIR, providerDir } from '../../output/tree-layout.js';
import { falseCondition, mergeConditions, readySummary, trueCondition, type DesiredCondition } from './conditions.js';
import type { StatusInputs } from './status-inputs.js';

export interface DesiredProviderStatus {
  live: KubeObject;
  status: { contract?: string; installedVersion?: string; conditions: Condition[]; observedGeneration?: number };
}

/** The status every live provider object should carry after this reconcile. */
export function desiredCapiProviderStatuses(input: StatusInputs): DesiredProviderStatus[] {
  const records = input.render?.provenance.providers ?? [];
  return (input.live.capiProviders ?? []).map((live) => {
    const dir = providerDir(live.kind, live.metadata.name);
    const record = records.find((candidate) => candidate.dir === dir);
    const withheld = input.render?.withheld.find(
      (entry) =>
        entry.kind === 'provider' &&
        entry.namespace === (live.metadata.namespace ?? 'default') &&
        entry.name === `${live.kind}/${live.metadata.name}`,
    );
    const planned = input.plan?.providers?.providers.find((candidate) => candidate.dir === dir);
    const shared = input.plan?.providers?.problems ?? [];
    let rendered: DesiredCondition;
    if (withheld)
      rendered = falseCondition(
        'ManifestsRendered',
        'ManifestsWithheld',
        `${withheld.reason}${withheld.previousKept ? ' (the previously published manifests stay)' : ''}`,
      );
    else if (record)
      rendered = trueCondition(
        'ManifestsRendered',
        'Rendered',
        `${record.version} (contract ${record.contract}) from ${record.source} rendered into ${record.dir}`,
      );
    else if (input.renderFailure)
      rendered = falseCondition('ManifestsRendered', 'RenderFailed', input.renderFailure.message);
    else if (shared.length > 0 || (planned?.problems.length ?? 0) > 0)
      rendered = falseCondition(
        'ManifestsRendered',
        'InvalidSpec',
        [...shared, ...(planned?.problems ?? [])].map(formatProblem).join('; '),
      );
    else
      rendered = falseCondition(
        'ManifestsRendered',
        'NotRendered',
        `${describeProvider(live)} was not rendered in this round`,
        'Info',
      );
    const published =
      record && (input.publish.outcome === 'published' || input.publish.outcome === 'unchanged')
        ? trueCondition(
            'ManifestsPublished',
            'Published',
            `published to ${input.publish.target}${input.publish.revision ? ` at ${input.publish.revision}` : ''}`,
          )
        : falseCondition(
            'ManifestsPublished',
            input.publish.outcome === 'failed' ? 'PublishRetrying' : 'NotPublished',
            input.publish.message ?? 'nothing published in this round',
            'Info',
          );
    const parts = [rendered, published, ...certManagerConditionFor(live, input)];
    const desired = [
      readySummary(parts, `${record?.version ?? ''} rendered and published; Argo CD or Flux applies it`),
      ...parts,
    ];
    const generation = live.metadata.generation;
    const current = (live as { status?: { conditions?: Condition[] } }).status?.conditions;
    const status: DesiredProviderStatus['status'] = {
      conditions: mergeConditions(current, desired, input.now, generation),
    };
    if (record) {
      status.contract = record.contract;
      status.installedVersion = record.version;
    }
    if (generation !== undefined) status.observedGeneration = generation;
    return { live, status };
  });
}

/**
 * On the CoreProvider that declares cert-manager (its annotations): whether cert-manager, which
 * every provider's webhook certificates need, was rendered, or why it is withheld. None otherwise.
 */
function certManagerConditionFor(live: KubeObject, input: StatusInputs): DesiredCondition[] {
  const certManager = input.plan?.providers?.certManager;
  if (
    !certManager ||
    certManager.core.kind !== live.kind ||
    certManager.core.metadata.name !== live.metadata.name ||
    (certManager.core.metadata.namespace ?? 'default') !== (live.metadata.namespace ?? 'default')
  )
    return [];
  const withheld = input.render?.withheld.find(
    (entry) => entry.kind === 'provider' && entry.name === 'CertManager/cert-manager',
  );
  if (withheld)
    return [
      falseCondition(
        'CertManagerRendered',
        'ManifestsWithheld',
        `cert-manager ${certManager.version}: ${withheld.reason}${withheld.previousKept ? ' (the previously published manifests stay)' : ''}`,
      ),
    ];
  const record = input.render?.provenance.providers?.find((candidate) => candidate.dir === CERT_MANAGER_DIR);
  if (record)
    return [
      trueCondition(
        'CertManagerRendered',
        'Rendered',
        `cert-manager ${record.version} from ${record.source} rendered into ${record.dir}, applied before the providers`,
      ),
    ];
  if (certManager.problems.length > 0)
    return [falseCondition('CertManagerRendered', 'InvalidSpec', certManager.problems.map(formatProblem).join('; '))];
  return [
    falseCondition(
      'CertManagerRendered',
      'NotRendered',
      `cert-manager ${certManager.version} was not rendered in this round`,
      'Info',
    ),
  ];
}
