// The GitOps wiring options a render and the controller derive from the output and --gitops flags:
// what Flux or Argo CD fetch the rendered tree from. Kept apart from output-settings.ts, which
// `plan` loads: only render and the controller need these. It loads no publisher and no wiring
// generator; those are loaded only by runs that render.
import { parseOciArtifactReference } from '../oci/oci-reference.js';
import { parseGitOpsEngine } from '../../gitops/wiring/gitops-engine.js';
import type { WiringOptions } from '../../gitops/wiring/render-wiring.js';
import { checkWiringOptions } from '../../gitops/wiring/wiring-options.js';
import { InputError } from '../core/problem.js';
import { UsageError } from './cli-io.js';
import { isUrl, type OutputSettings, type WiringSettings } from './output-settings.js';

/** The flag each field of the wiring options comes from, for messages. */
const FLAG_OF_FIELD: Readonly<Record<string, string>> = {
  namespace: '--gitops-namespace',
  name: '--gitops-name',
  sopsSecret: '--sops-secret',
  'source.secretName': '--gitops-secret',
  'source.url': '--gitops-url',
  'source.branch': '--branch',
  'source.path': '--path',
  'source.tag': '--oci',
};

/**
 * The wiring options for the chosen engine, or undefined for `none`. For Git the engine fetches
 * from --gitops-url (default: the --git URL); for OCI from the artifact's repository and tag.
 * Returns undefined with `required: false` when no URL is known (the controller then only reads
 * sync state); the render command requires one. A value the engine could not use (a namespace that
 * is no DNS label, a Secret name with capitals) is a usage error naming the flag, before anything runs.
 */
export function wiringOptionsFor(
  output: OutputSettings,
  wiring: WiringSettings & { sopsSecret?: string | undefined },
  required: boolean,
): WiringOptions | undefined {
  const options = unchecked(output, wiring, required);
  if (!options) return undefined;
  try {
    checkWiringOptions(options);
  } catch (error) {
    if (!(error instanceof InputError)) throw error;
    throw new UsageError(
      error.problems
        .map(
          (problem) =>
            `${FLAG_OF_FIELD[problem.path ?? ''] ?? `GitOps wiring ${problem.path ?? ''}`.trim()}: ${problem.message}`,
        )
        .join('\n'),
    );
  }
  return options;
}

function unchecked(
  output: OutputSettings,
  wiring: WiringSettings & { sopsSecret?: string | undefined },
  required: boolean,
): WiringOptions | undefined {
  let engine: ReturnType<typeof parseGitOpsEngine>;
  try {
    engine = parseGitOpsEngine(wiring.gitops);
  } catch (error) {
    throw new UsageError(`--gitops: ${(error as Error).message}`);
  }
  if (engine === 'none') return undefined;
  const secret = wiring.gitopsSecret ? { secretName: wiring.gitopsSecret } : {};
  const base = {
    engine,
    name: wiring.gitopsName,
    namespace: wiring.gitopsNamespace ?? (engine === 'flux' ? 'flux-system' : 'argocd'),
    ...(wiring.sopsSecret ? { sopsSecret: wiring.sopsSecret } : {}),
  };
  if (output.oci) {
    const reference = parseOciArtifactReference(output.oci);
    return {
      ...base,
      source: {
        kind: 'oci',
        url: `oci://${reference.registry}/${reference.repository}`,
        tag: reference.tag,
        ...secret,
        ...(output.plainHttp ? { insecure: true } : {}),
      },
    };
  }
  const url = wiring.gitopsUrl ?? (output.git && isUrl(output.git) ? output.git : undefined);
  if (!url) {
    if (required)
      throw new UsageError(
        `--gitops ${engine} needs --gitops-url: the URL ${engine === 'flux' ? 'Flux' : 'Argo CD'} fetches the rendered tree from`,
      );
    return undefined;
  }
  return { ...base, source: { kind: 'git', url, branch: output.branch, path: output.path, ...secret } };
}
