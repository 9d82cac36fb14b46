// The output settings a render and the controller share (--output, --git, --oci and their options)
// and the GitOps wiring options they lead to: checked and turned into values without loading any
// publisher (a run that changes nothing, or `plan`, needs no git, GitHub or registry client).
import path from 'node:path';
import type { ProtectedPath } from '../../gitops/protected-paths.js';
import { parseOciArtifactReference } from '../../gitops/oci-artifact-publisher.js';
import { parseGitOpsEngine, type WiringOptions } from '../../gitops/wiring/render-wiring.js';
import { UsageError } from './cli-io.js';

export interface OutputSettings {
  output?: string | undefined;
  git?: string | undefined;
  oci?: string | undefined;
  ociSource?: string | undefined;
  plainHttp?: boolean | undefined;
  pullRequest?: boolean | undefined;
  prBranch?: string | undefined;
  prWhenUnnecessary?: string | undefined;
  githubRepo?: string | undefined;
  branch: string;
  path: string;
}

export interface WiringSettings {
  gitops: string;
  gitopsUrl?: string | undefined;
  gitopsNamespace?: string | undefined;
  gitopsName: string;
  gitopsSecret?: string | undefined;
}

/** Checks that exactly one output is chosen and that its options fit together. */
export function checkOutputSettings(settings: OutputSettings): void {
  if ([settings.output, settings.git, settings.oci].filter(Boolean).length !== 1) throw new UsageError('exactly one of --output <dir>, --git <repo> or --oci <oci://registry/repo:tag> is needed');
  if (settings.pullRequest && !settings.git) throw new UsageError('--pull-request needs --git <GitHub repository URL>');
  const when = settings.prWhenUnnecessary ?? 'close';
  if (when !== 'close' && when !== 'leave') throw new UsageError(`--pr-when-unnecessary must be close or leave, not "${when}"`);
}

export function isUrl(value: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(value) || /^[^/]+@[^/]+:/.test(value);
}

/** What a publish's revision is, for reports and conditions. */
export function revisionKindOf(settings: OutputSettings): 'commit' | 'digest' | 'none' {
  return settings.oci ? 'digest' : settings.git ? 'commit' : 'none';
}

/** What a render adds to the shared output settings: what the output must keep clear of, and whether it may adopt a directory. */
export interface PublisherGuards {
  /** Inputs and the release source: an output directory (or in-place --path) may not be or hold them. */
  protectedPaths?: readonly ProtectedPath[];
  /** `--adopt-output`: publish into a directory holding files clusterstack did not write. */
  adoptOutput?: boolean;
}

/** The local directory `--output` or a local `--git` path names (to leave out of the inputs); none for URLs and OCI. */
export function localOutputDirectory(settings: OutputSettings, cwd: string): string | undefined {
  if (settings.output) return path.resolve(cwd, settings.output);
  if (settings.git && !isUrl(settings.git)) return path.resolve(cwd, settings.git);
  return undefined;
}

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
