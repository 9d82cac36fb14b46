// The output a render or the controller publishes to, from the flags both commands share: a
// directory, a Git repository (commit or pull request) or an OCI artifact. Loads every publisher:
// open-output-publisher.ts loads only the one a run needs.
import path from 'node:path';
import { DirectoryPublisher } from '../../gitops/directory-publisher.js';
import { GitPublisher } from '../../gitops/git-publisher.js';
import { OciArtifactPublisher } from '../../gitops/oci-artifact-publisher.js';
import type { Publisher } from '../../gitops/publisher.js';
import { PullRequestPublisher } from '../../gitops/pull-request-publisher.js';
import type { Config } from '../config.js';
import { sha256Hex } from '../release/content-digest.js';
import { fetchWithTimeout } from '../http/http-retry.js';
import { createConnectingFetch } from '../http/remote-fetch.js';
import { UsageError } from './cli-io.js';
import { refreshDirectoryFleetIndex } from '../../gitops/shard-directory-index.js';

/** How long a shard waits for another one rewriting the shards' index of an --output directory. */
const SHARD_INDEX_WAIT_MS = 60_000;
import { checkOutputSettings, isUrl, type OutputSettings, type PublisherGuards } from './output-settings.js';

// The settings side lives in output-settings.ts (no publisher loaded), the wiring options in
// wiring-options.ts; their names stay importable from here.
export {
  checkOutputSettings,
  isUrl,
  type OutputSettings,
  type PublisherGuards,
  revisionKindOf,
} from './output-settings.js';
export { wiringOptionsFor } from './wiring-options.js';

function githubRepository(value: string | undefined): { owner?: string; repo?: string } {
  if (value === undefined) return {};
  const match = /^([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)$/.exec(value);
  if (!match) throw new UsageError(`--github-repo must be <owner>/<repo>, not "${value}"`);
  return { owner: match[1]!, repo: match[2]! };
}

/** The publisher for the chosen output, with the remote timeouts of `config` and the guards a render sets. */
export function createOutputPublisher(
  settings: OutputSettings,
  config: Readonly<Config>,
  cwd: string,
  messageTemplate?: string,
  guards: PublisherGuards = {},
): Publisher {
  checkOutputSettings(settings);
  const protectedPaths = guards.protectedPaths ?? [];
  const logged = guards.logger ? { logger: guards.logger } : {};
  if (settings.output) {
    const dir = path.resolve(cwd, settings.output);
    return new DirectoryPublisher(dir, {
      adopt: guards.adoptOutput ?? false,
      protectedPaths,
      // A shard's directory: the shards' index beside it follows each tree it publishes.
      ...(settings.shardIndex
        ? { afterChange: async () => void (await refreshDirectoryFleetIndex(path.dirname(dir), SHARD_INDEX_WAIT_MS)) }
        : {}),
    });
  }
  if (settings.oci) {
    return new OciArtifactPublisher({
      reference: settings.oci,
      plainHttp: settings.plainHttp ?? false,
      tempDir: config.cacheDir,
      fetch: createConnectingFetch(config.timeouts.connectMs),
      timeoutMs: config.timeouts.readMs,
      totalTimeoutMs: config.timeouts.totalMs,
      ...(settings.ociSource ? { source: settings.ociSource } : {}),
      ...(config.registryUsername && config.registryPassword
        ? { credentials: { username: config.registryUsername, password: config.registryPassword } }
        : {}),
      ...logged,
    });
  }
  const repository = isUrl(settings.git!) ? settings.git! : path.resolve(cwd, settings.git!);
  const author = { name: config.gitAuthorName, email: config.gitAuthorEmail };
  const common = {
    env: config.childEnv,
    ...(config.gitToken ? { token: config.gitToken } : {}),
    ...(messageTemplate !== undefined ? { messageTemplate } : {}),
  };
  if (settings.pullRequest) {
    return new PullRequestPublisher({
      git: {
        repository,
        baseBranch: settings.branch,
        path: settings.path,
        workDir: path.join(
          config.cacheDir,
          'git-pr',
          sha256Hex(`${repository}\n${settings.branch}\n${settings.path}`).slice(0, 16),
        ),
        author,
        ...common,
      },
      github: {
        fetch: fetchWithTimeout(createConnectingFetch(config.timeouts.connectMs), config.timeouts.readMs),
        ...(config.githubApiUrl ? { baseUrl: config.githubApiUrl } : {}),
        ...(config.githubToken ? { token: config.githubToken } : {}),
        ...githubRepository(settings.githubRepo),
      },
      whenUnnecessary: (settings.prWhenUnnecessary ?? 'close') as 'close' | 'leave',
      ...(settings.prBranch ? { branch: settings.prBranch } : {}),
      ...logged,
    });
  }
  return new GitPublisher({
    repository,
    branch: settings.branch,
    path: settings.path,
    workDir: path.join(config.cacheDir, 'git', sha256Hex(`${repository}\n${settings.branch}`).slice(0, 16)),
    author,
    protectedPaths,
    overwriteEdits: guards.force ?? false,
    ...(settings.shardIndex ? { fleetIndex: true } : {}),
    ...common,
    ...logged,
  });
}
