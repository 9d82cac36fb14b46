// The output a render or the controller publishes to, from the flags both commands share:
// a directory, a Git repository (commit or pull request) or an OCI artifact; and the GitOps wiring
// that points the engine at it.
import path from 'node:path';
import { DirectoryPublisher } from '../../gitops/directory-publisher.js';
import { GitPublisher } from '../../gitops/git-publisher.js';
import { OciArtifactPublisher, parseOciArtifactReference } from '../../gitops/oci-artifact-publisher.js';
import type { ProtectedPath } from '../../gitops/protected-paths.js';
import type { Publisher } from '../../gitops/publisher.js';
import { PullRequestPublisher } from '../../gitops/pull-request-publisher.js';
import { parseGitOpsEngine, type WiringOptions } from '../../gitops/wiring/render-wiring.js';
import type { Config } from '../config.js';
import { sha256Hex } from '../release/content-digest.js';
import { fetchWithTimeout } from '../sources/http-retry.js';
import { createConnectingFetch } from '../sources/remote-fetch.js';
import { UsageError } from './cli-io.js';
import { checkOutputSettings, isUrl, type OutputSettings, type WiringSettings } from './output-settings.js';

// The settings alone live in output-settings.ts, so a command that only checks them (plan) does not
// load every publisher; they are re-exported here for the commands that publish.
export { checkOutputSettings, isUrl, localOutputDirectory, type OutputSettings, revisionKindOf, type WiringSettings } from './output-settings.js';

function githubRepository(value: string | undefined): { owner?: string; repo?: string } {
  if (value === undefined) return {};
  const match = /^([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)$/.exec(value);
  if (!match) throw new UsageError(`--github-repo must be <owner>/<repo>, not "${value}"`);
  return { owner: match[1]!, repo: match[2]! };
}

/** What a render adds to the shared output settings: what the output must keep clear of, and whether it may adopt a directory. */
export interface PublisherGuards {
  /** Inputs and the release source: an output directory (or in-place --path) may not be or hold them. */
  protectedPaths?: readonly ProtectedPath[];
  /** `--adopt-output`: publish into a directory holding files clusterstack did not write. */
  adoptOutput?: boolean;
}

/** The publisher for the chosen output, with the remote timeouts of `config` and the guards a render sets. */
export function createOutputPublisher(settings: OutputSettings, config: Readonly<Config>, cwd: string, messageTemplate?: string, guards: PublisherGuards = {}): Publisher {
  checkOutputSettings(settings);
  const protectedPaths = guards.protectedPaths ?? [];
  if (settings.output) return new DirectoryPublisher(path.resolve(cwd, settings.output), { adopt: guards.adoptOutput ?? false, protectedPaths });
  if (settings.oci) {
    return new OciArtifactPublisher({
      reference: settings.oci,
      plainHttp: settings.plainHttp ?? false,
      tempDir: config.cacheDir,
      fetch: createConnectingFetch(config.timeouts.connectMs),
      timeoutMs: config.timeouts.readMs,
      totalTimeoutMs: config.timeouts.totalMs,
      ...(settings.ociSource ? { source: settings.ociSource } : {}),
      ...(config.registryUsername && config.registryPassword ? { credentials: { username: config.registryUsername, password: config.registryPassword } } : {}),
    });
  }
  const repository = isUrl(settings.git!) ? settings.git! : path.resolve(cwd, settings.git!);
  const author = { name: config.gitAuthorName, email: config.gitAuthorEmail };
  const common = { env: config.childEnv, ...(config.gitToken ? { token: config.gitToken } : {}), ...(messageTemplate !== undefined ? { messageTemplate } : {}) };
  if (settings.pullRequest) {
    return new PullRequestPublisher({
      git: { repository, baseBranch: settings.branch, path: settings.path, workDir: path.join(config.cacheDir, 'git-pr', sha256Hex(`${repository}\n${settings.branch}\n${settings.path}`).slice(0, 16)), author, ...common },
      github: { fetch: fetchWithTimeout(createConnectingFetch(config.timeouts.connectMs), config.timeouts.readMs), ...(config.githubApiUrl ? { baseUrl: config.githubApiUrl } : {}), ...(config.githubToken ? { token: config.githubToken } : {}), ...githubRepository(settings.githubRepo) },
      whenUnnecessary: (settings.prWhenUnnecessary ?? 'close') as 'close' | 'leave',
      ...(settings.prBranch ? { branch: settings.prBranch } : {}),
    });
  }
  return new GitPublisher({ repository, branch: settings.branch, path: settings.path, workDir: path.join(config.cacheDir, 'git', sha256Hex(`${repository}\n${settings.branch}`).slice(0, 16)), author, protectedPaths, ...common });
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
