// When a finished run may be recorded as settled (gitops/settled-run-record.ts): its target then
// holds a fixed point — a render of the same fingerprint on it reuses every unit and writes the same
// bytes — so the next run with that fingerprint may end without rendering. Anything that makes the
// next render differ keeps a run from being settled: a withheld unit (it is tried again), a values
// failure, an addon object half-way through a move (the next render completes it), and any warning
// (a note a run gives once, a ClusterRequest that waits, a hand-edited encrypted Secret).
import type { EncryptedSecretsReport } from '../output/encrypted-secrets-report.js';
import { reportEncryptedSecrets } from '../output/encrypted-secrets-report.js';
import type { PipelineResult } from './render-and-publish.js';

/** What a settled run's report says that a run changing nothing repeats. */
export interface SettledRunReport {
  /** Units in the tree (all reused by a run that changes nothing). */
  units: number;
  /** Encrypted Secrets per unit, none of them encrypted in a run that changes nothing. */
  secrets?: EncryptedSecretsReport;
  clusterRequests?: {
    namespace: string;
    name: string;
    purpose: string;
    phase: string;
    reason: string;
    cluster: string | null;
    message: string;
  }[];
  clusterRequestsNotOurs?: { namespace: string; name: string; message: string }[];
}

/** The report to record for `run`, or undefined when the run did not leave its target settled. `warnings`: how many the pipeline gave. */
export function settledRunReport(run: PipelineResult<unknown>, warnings: number): SettledRunReport | undefined {
  if (run.status !== 'published' || warnings > 0) return undefined;
  const { outcome } = run;
  if (
    outcome.withheld.length > 0 ||
    outcome.notes.length > 0 ||
    outcome.provenance.valuesFailures.length > 0 ||
    (outcome.provenance.addonHandovers?.length ?? 0) > 0
  )
    return undefined;
  const units = outcome.stats.unitsRendered + outcome.stats.unitsReused;
  const secrets = reportEncryptedSecrets(outcome.provenance.units, outcome.provenance.units);
  const requests = outcome.summary.clusterRequests?.requests;
  const notOurs = outcome.summary.clusterRequests?.notOurs;
  return {
    units,
    ...(secrets ? { secrets } : {}),
    ...(requests ? { clusterRequests: requests } : {}),
    ...(notOurs ? { clusterRequestsNotOurs: notOurs } : {}),
  };
}
