// The GitOps wiring options a render and the controller derive from the output and --gitops flags:
// what Flux or Argo CD fetch the rendered tree from. Kept apart from output-settings.ts, which
// `plan` loads: only render and the controller need these. It loads no publisher and no wiring
// generator; those are loaded only by runs that render.
import { parseOciArtifactReference } from '../oci/oci-reference.js';
import { parseGitOpsEngine } from '../../gitops/wiring/gitops-engine.js';
import type { WiringOptions } from '../../gitops/wiring/render-wiring.js';
import { UsageError } from './cli-io.js';
import { isUrl, type OutputSettings, type WiringSettings } from './output-settings.js';

/**
 * The wiring options for the chosen engine, or undefined for `none`. For Git the engine fetches
 * from --gitops-url (default: the --git URL); for OCI from the artifact's repository and tag.
 * Returns undefined with `required: false` when no URL is known (the controller then only reads
 * sync state); the render command requires one.
 */
export function wiringOptionsFor(output: OutputSettings, wiring: WiringSettings, required: boolean): WiringOptions | undefined {
  const engine = parseGitOpsEngine(wiring.gitops);
  if (engine === 'none') return undefined;
  const secret = wiring.gitopsSecret ? { secretName: wiring.gitopsSecret } : {};
  const base = { engine, name: wiring.gitopsName, namespace: wiring.gitopsNamespace ?? (engine === 'flux' ? 'flux-system' : 'argocd') };
  if (output.oci) {
    const reference = parseOciArtifactReference(output.oci);
    return { ...base, source: { kind: 'oci', url: `oci://${reference.registry}/${reference.repository}`, tag: reference.tag, ...secret } };
  }
  const url = wiring.gitopsUrl ?? (output.git && isUrl(output.git) ? output.git : undefined);
  if (!url) {
    if (required) throw new UsageError(`--gitops ${engine} needs --gitops-url: the URL ${engine === 'flux' ? 'Flux' : 'Argo CD'} fetches the rendered tree from`);
    return undefined;
  }
  return { ...base, source: { kind: 'git', url, branch: output.branch, path: output.path, ...secret } };
}
