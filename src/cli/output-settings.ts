// The output flags render, plan and the controller share (a directory, a Git repository, an OCI
// artifact), checked without loading any publisher: plan only reads a target when one is named.
import path from 'node:path';
import type { ProtectedPath } from '../../gitops/protected-paths.js';
import type { Logger } from '../core/logger.js';
import { subdirProblem } from '../../gitops/tree-paths.js';
import { parseOciArtifactReference } from '../oci/oci-reference.js';
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
  /** The path (or directory) is one controller shard's subtree: keep the shards' index beside it (docs/sharding.md). */
  shardIndex?: boolean | undefined;
}

export interface WiringSettings {
  gitops: string;
  gitopsUrl?: string | undefined;
  gitopsNamespace?: string | undefined;
  gitopsName: string;
  gitopsSecret?: string | undefined;
}

/** Checks that exactly one output is chosen, that its options fit together, and that an --oci reference parses (a usage error otherwise). */
export function checkOutputSettings(settings: OutputSettings): void {
  if ([settings.output, settings.git, settings.oci].filter(Boolean).length !== 1)
    throw new UsageError('exactly one of --output <dir>, --git <repo> or --oci <oci://registry/repo:tag> is needed');
  if (settings.pullRequest && !settings.git) throw new UsageError('--pull-request needs --git <GitHub repository URL>');
  const when = settings.prWhenUnnecessary ?? 'close';
  if (when !== 'close' && when !== 'leave')
    throw new UsageError(`--pr-when-unnecessary must be close or leave, not "${when}"`);
  const pathProblem = settings.git ? subdirProblem(settings.path) : undefined;
  if (pathProblem !== undefined) throw new UsageError(`--path "${settings.path}" ${pathProblem}`);
  if (settings.oci) {
    try {
      parseOciArtifactReference(settings.oci);
    } catch (error) {
      const message = (error as Error).message;
      throw new UsageError(message.startsWith('--oci') ? message : `--oci: ${message}`);
    }
  }
}

export function isUrl(value: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(value) || /^[^/]+@[^/]+:/.test(value);
}

/** What a publish's revision is, for reports and conditions. */
export function revisionKindOf(settings: OutputSettings): 'commit' | 'digest' | 'none' {
  return settings.oci ? 'digest' : settings.git ? 'commit' : 'none';
}

/** What a run adds to the shared output settings: what the output must keep clear of, whether it may adopt a directory, where the publisher logs. */
export interface PublisherGuards {
  /** Inputs and the release source: an output directory (or in-place --path) may not be or hold them. */
  protectedPaths?: readonly ProtectedPath[];
  /** `--adopt-output`: publish into a directory holding files clusterstack did not write. */
  adoptOutput?: boolean;
  /** `--force`: an in-place --git run overwrites uncommitted edits to the files it renders. */
  force?: boolean;
  /** The controller's logger: a Git, pull-request or OCI publisher logs there what it recovered from (a push that lost a race). */
  logger?: Logger;
}

/** The local directory `--output` or a local `--git` path names (to leave out of the inputs); none for URLs and OCI. */
export function localOutputDirectory(settings: OutputSettings, cwd: string): string | undefined {
  if (settings.output) return path.resolve(cwd, settings.output);
  if (settings.git && !isUrl(settings.git)) return path.resolve(cwd, settings.git);
  return undefined;
}
