// The options `plan` decides a run with: render's own (src/pipeline/plan-run.ts RunOptions), from
// plan's flags. The secret policy and its recipients are part of every unit's digest, so plan
// takes render's --secrets, --age-recipient and --sops-config: a tree rendered with `--secrets
// encrypt` shows its units as reused only when plan is given the same. Held Clusters and provider
// guards are withheld rather than refused, because plan reports them instead of stopping.
import type { SchedulerConfig } from '../cluster-requests/scheduler-config.js';
import type { RunOptions } from '../pipeline/plan-run.js';
import type { SecretPolicy } from '../render/secret-policy.js';
import type { EncryptionInput } from '../secrets/secret-encryption.js';

/** What plan's flags say about the run it shows. */
export interface PlanFlags {
  secrets: SecretPolicy;
  encryption?: EncryptionInput | undefined;
  engine: 'none' | 'flux' | 'argocd';
  scheduler?: SchedulerConfig | undefined;
}

/** The run options render would decide with, for plan's flags. */
export function planRunOptions(flags: PlanFlags): RunOptions {
  return {
    secrets: flags.secrets,
    ...(flags.encryption ? { encryption: flags.encryption } : {}),
    ...(flags.engine !== 'none' ? { gitops: { engine: flags.engine } } : {}),
    heldClusters: 'withhold',
    providerGuards: 'withhold',
    ...(flags.scheduler ? { scheduler: flags.scheduler } : {}),
  };
}
