// `plan --git/--output/--oci [--branch] [--path] [--pull-request]`: the target render would publish
// to, read and never written, so plan compares with the published tree: provider changes, which
// cluster each ClusterRequest keeps, each moving Cluster's upgrade order. The same flags as render; a directory and an OCI tag are read through their
// publishers (read-only unless they hold the lock, which plan never takes), a Git target through a
// shallow fetch into a repository of its own (the publisher's clone and the target stay untouched).
// The readers (git, publishers) load only when a target is named: plan without one never needs them.
import path from 'node:path';
import type { Config } from '../config.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import { sha256Hex } from '../release/content-digest.js';
import { checkOutputSettings, isUrl, type OutputSettings } from './output-settings.js';

export const PLAN_TARGET_OPTIONS = {
  output: { type: 'string' },
  git: { type: 'string' },
  oci: { type: 'string' },
  branch: { type: 'string', default: 'main' },
  path: { type: 'string', default: '' },
  'pull-request': { type: 'boolean', default: false },
} as const;

export const PLAN_TARGET_HELP = `Target (optional, the same flags as render; read, never written):
  --output <dir> | --git <path or URL> | --oci <oci://registry/repo:tag>
  --branch <name>, --path <subdir>, --pull-request (reads the base branch, as render does)
                           compare with the published tree: each provider is added, upgraded,
                           unchanged, refused (a downgrade) or removed; each Cluster moving to a
                           release with another cluster addon version gets its upgrade order;
                           with --scheduler-config, which cluster each ClusterRequest keeps (kept),
                           gets now (new), or why it is Pending`;

/** The target named by the flags, if any. */
export function planTargetSettings(values: {
  output?: string | undefined;
  git?: string | undefined;
  oci?: string | undefined;
  branch: string;
  path: string;
  'pull-request'?: boolean | undefined;
  'plain-http'?: boolean | undefined;
}): OutputSettings | undefined {
  if (!values.output && !values.git && !values.oci) {
    if (values['pull-request']) checkOutputSettings({ branch: values.branch, path: values.path, pullRequest: true });
    return undefined;
  }
  const settings: OutputSettings = {
    output: values.output,
    git: values.git,
    oci: values.oci,
    branch: values.branch,
    path: values.path,
    pullRequest: values['pull-request'],
    plainHttp: values['plain-http'],
  };
  checkOutputSettings(settings);
  return settings;
}

/** What the target holds now (empty when it holds nothing yet), and how to name it. */
export async function readPlanTarget(
  settings: OutputSettings,
  config: Readonly<Config>,
  cwd: string,
): Promise<{ target: string; tree: RenderedTree }> {
  if (settings.git) {
    const { readPublishedGitTree } = await import('../../gitops/read-git-tree.js');
    const repository = isUrl(settings.git) ? settings.git : path.resolve(cwd, settings.git);
    const tree = await readPublishedGitTree({
      repository,
      branch: settings.branch,
      path: settings.path,
      workDir: path.join(config.cacheDir, 'git-read', sha256Hex(`${repository}\n${settings.branch}`).slice(0, 16)),
      author: { name: config.gitAuthorName, email: config.gitAuthorEmail },
      env: config.childEnv,
      ...(config.gitToken ? { token: config.gitToken } : {}),
    });
    return {
      target: `${repository} (branch ${settings.branch}${settings.path ? `, path ${settings.path}` : ''})`,
      tree,
    };
  }
  // A directory someone else's files are in reads as what clusterstack wrote there (or nothing).
  const [{ DirectoryPublisher }, { createOutputPublisher }] = await Promise.all([
    import('../../gitops/directory-publisher.js'),
    import('./output-publisher.js'),
  ]);
  const publisher = settings.output
    ? new DirectoryPublisher(path.resolve(cwd, settings.output), { adopt: true })
    : createOutputPublisher(settings, config, cwd);
  return { target: publisher.target, tree: await publisher.readPrevious() };
}
