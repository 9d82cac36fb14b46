// Deciding a run, for `render` (renderAndPublish) and `plan` alike: the settings a run decides
// with, and the one step before the pure decision that reads anything (the locked provider
// releases). Light on purpose: `plan` loads it without the rest of the pipeline.
import { engineRulesFor, managementAnnotationsFor } from '../../gitops/wiring/engine-rules.js';
import type { WiringOptions } from '../../gitops/wiring/render-wiring.js';
import type { SchedulerSetting } from '../cluster-requests/plan-cluster-requests.js';
import type { SchedulerConfig } from '../cluster-requests/scheduler-config.js';
import type { PublishedState } from '../output/published-state.js';
import type { Plan } from '../plan/build-plan.js';
import { loadLockedProviders } from '../providers/guard-providers.js';
import type { SecretPolicy } from '../render/secret-policy.js';
import { decideRun, type RunPlan, type RunSettings } from '../run-plan/decide-run.js';
import type { EncryptionInput } from '../secrets/secret-encryption.js';

/** The options of a run that decide what it publishes (a subset of PipelineOptions). */
export interface RunOptions {
  secrets: SecretPolicy;
  encryption?: EncryptionInput;
  /** The engine decides the management annotations and the helm hook layout. */
  gitops?: Pick<WiringOptions, 'engine'>;
  providerGuards?: 'refuse' | 'withhold';
  heldClusters?: 'refuse' | 'withhold';
  scheduler?: SchedulerConfig | SchedulerSetting;
}

/**
 * Reads what the plan needs beyond the inputs (the locked provider releases) and decides the run:
 * the one plan both `render` and `plan` use.
 */
export async function planRun(plan: Plan, published: PublishedState, settings: RunSettings): Promise<RunPlan> {
  // Cluster API providers: an unversioned one keeps the version the target was rendered with.
  const locked = plan.providers ? await loadLockedProviders(plan.providers, published.providers) : undefined;
  return decideRun(plan, locked, published, settings);
}

/** What decides a run beyond the inputs, from the pipeline's options (encryption recipients resolved against the target's .sops.yaml). */
export async function runSettings(options: RunOptions, published: PublishedState): Promise<RunSettings> {
  // age and its ciphers are loaded only by runs that encrypt.
  const encryption =
    options.secrets === 'encrypt'
      ? (await import('../secrets/secret-encryption.js')).resolveSecretEncryption(
          options.encryption ?? { recipients: [], recipientsOrigin: '' },
          published.sopsConfig,
        )
      : undefined;
  const annotations = managementAnnotationsFor(options.gitops?.engine);
  return {
    secrets: options.secrets,
    ...(encryption ? { encryption } : {}),
    ...(annotations ? { managementAnnotations: annotations } : {}),
    // Argo CD maps helm hooks to its own phases; Flux and plain appliers get them ordered or left out.
    engine: engineRulesFor(options.gitops?.engine),
    ...(options.providerGuards ? { providerGuards: options.providerGuards } : {}),
    ...(options.heldClusters ? { heldClusters: options.heldClusters } : {}),
    ...(options.scheduler ? { scheduler: options.scheduler } : {}),
  };
}
