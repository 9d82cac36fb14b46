// `clusterstack render <files or dirs...> --release-source <src> (--output <dir> | --git <repo>)`
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DirectoryPublisher } from '../../gitops/directory-publisher.js';
import { GitPublisher } from '../../gitops/git-publisher.js';
import { OciArtifactPublisher, parseOciArtifactReference } from '../../gitops/oci-artifact-publisher.js';
import { PullRequestPublisher } from '../../gitops/pull-request-publisher.js';
import type { Publisher } from '../../gitops/publisher.js';
import { createHelmDependencies } from '../../renderers/helm-dependencies.js';
import { parseGitOpsEngine, type WiringOptions } from '../../gitops/wiring/render-wiring.js';
import type { Config } from '../config.js';
import { InputError } from '../core/problem.js';
import { readInputFiles } from '../inputs/read-input-files.js';
import { buildPlan } from '../plan/build-plan.js';
import { planReport, reportHasProblems } from '../plan/plan-report.js';
import { sha256Hex } from '../release/content-digest.js';
import { compareTrees, summarizeChanges } from '../render/change-summary.js';
import { renderPullRequestBody } from '../render/pull-request-body.js';
import { type RenderProgress, renderOutput, type WithheldEntry } from '../render/render-output.js';
import { SECRET_POLICIES, type SecretPolicy } from '../render/secret-policy.js';
import { type CliIo, EXIT_OK, UsageError } from './cli-io.js';
import { configFromFlags, isRemoteLocation, resolveLocation, SOURCE_HELP, SOURCE_OPTIONS, sourceOpenerFrom } from './common-options.js';

export const RENDER_USAGE = `Usage: clusterstack render <files or dirs...> --release-source <source> (--output <dir> | --git <repo> | --oci <ref>) [options]

Renders the ClusterClass side of every kept release and the addons of every Cluster into plain
manifests, and writes them to a directory or commits them to a Git repository (only when they
changed). Argo CD or Flux apply them.

Output (one of):
  --output <dir>           write the tree into a directory (swapped in atomically)
  --git <path or URL>      commit the tree to a Git repository; a local path that does not exist is
                           created. HTTPS remotes take their token from CLUSTERSTACK_GIT_TOKEN
  --branch <name>          branch to commit to (default: main)
  --path <subdir>          directory inside the repository for the tree (default: the root)
  --pull-request           with --git <GitHub URL>: propose the change as a pull request from its
                           own branch (GITHUB_TOKEN) instead of committing to --branch
  --pr-branch <name>       the pull request's branch (default: clusterstack/render-<branch>-<hash>)
  --pr-when-unnecessary <close|leave>  what to do with the open pull request when a later render
                           matches the base branch again (default: close)
  --pr-template <file>     Handlebars template for the pull request body
  --github-repo <owner/repo>  the GitHub repository of --git, when its URL does not say (mirrors)
  --oci <oci://registry/repo:tag>  push the tree as one OCI artifact (a reproducible gzip tar layer)
  --oci-source <url>       the org.opencontainers.image.source annotation (e.g. the inputs' Git URL)

Options:
${SOURCE_HELP}
  --secrets <policy>       refuse (default) | drop | allow rendered Secrets and private keys
  --helm <path>            the helm binary (CLUSTERSTACK_HELM; default: bundled, then PATH)
  --readme-template <file> Handlebars template for the tree's README.md
  --commit-template <file> Handlebars template for the commit message
  --json                   print a JSON report (files written/removed, withheld, commit)

GitOps wiring (written under flux/ or argocd/ in the tree):
  --gitops <engine>        none (default) | flux | argocd
  --gitops-url <url>       the URL Flux or Argo CD fetches the tree from (default: the --git URL)
  --gitops-namespace <ns>  where the wiring objects live (default: flux-system, or argocd)
  --gitops-name <name>     base name of the source and root objects (default: clusterstacks)
  --gitops-secret <name>   Flux: the Secret with clone or pull credentials (its name only)`;

export interface RenderReport {
  target: string;
  changed: boolean;
  /** Commit sha (Git, pull request) or manifest digest (OCI); null when nothing changed. */
  commit: string | null;
  pullRequest?: string;
  files: { written: string[]; removed: string[] };
  withheld: { kind: 'release' | 'cluster'; namespace: string; name: string; reason: string; previousOutputKept: boolean }[];
  summary: string;
  units: { rendered: number; reused: number };
  helmProcesses: number;
  warnings: string[];
}

export async function renderCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      ...SOURCE_OPTIONS,
      output: { type: 'string' },
      git: { type: 'string' },
      oci: { type: 'string' },
      'oci-source': { type: 'string' },
      'pull-request': { type: 'boolean', default: false },
      'pr-branch': { type: 'string' },
      'pr-when-unnecessary': { type: 'string', default: 'close' },
      'pr-template': { type: 'string' },
      'github-repo': { type: 'string' },
      branch: { type: 'string', default: 'main' },
      path: { type: 'string', default: '' },
      secrets: { type: 'string', default: 'refuse' },
      helm: { type: 'string' },
      'readme-template': { type: 'string' },
      'commit-template': { type: 'string' },
      gitops: { type: 'string', default: 'none' },
      'gitops-url': { type: 'string' },
      'gitops-namespace': { type: 'string' },
      'gitops-name': { type: 'string', default: 'clusterstacks' },
      'gitops-secret': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  if (positionals.length === 0) throw new UsageError('render needs at least one input file or directory');
  if (!values['release-source']) throw new UsageError('render needs --release-source (a directory, github:owner/repo or oci://registry/repo)');
  if ([values.output, values.git, values.oci].filter(Boolean).length !== 1) throw new UsageError('render needs exactly one of --output <dir>, --git <repo> or --oci <oci://registry/repo:tag>');
  if (values['pull-request'] && !values.git) throw new UsageError('--pull-request needs --git <GitHub repository URL>');
  if (values['pr-when-unnecessary'] !== 'close' && values['pr-when-unnecessary'] !== 'leave') throw new UsageError(`--pr-when-unnecessary must be close or leave, not "${values['pr-when-unnecessary']}"`);
  if (!SECRET_POLICIES.includes(values.secrets as SecretPolicy)) throw new UsageError(`--secrets must be one of ${SECRET_POLICIES.join(', ')}, not "${values.secrets}"`);

  const gitops = wiringFromFlags(values);
  const config = configFromFlags(values, io);
  const location = resolveLocation(values['release-source'], io.cwd);
  const warnings: string[] = [];
  const warn = (message: string): void => {
    warnings.push(message);
    if (!values.json) io.stderr(`warning: ${message}\n`);
  };
  const readmeTemplate = values['readme-template'] ? await readTemplate(values['readme-template'], io.cwd, '--readme-template') : undefined;
  const commitTemplate = values['commit-template'] ? await readTemplate(values['commit-template'], io.cwd, '--commit-template') : undefined;
  const prTemplate = values['pr-template'] ? await readTemplate(values['pr-template'], io.cwd, '--pr-template') : undefined;

  // Observe and decide; any problem with the inputs stops here, before anything is written.
  const manifests = await readInputFiles(positionals.map((input) => path.resolve(io.cwd, input)), isRemoteLocation(location) ? [] : [location]);
  const plan = await buildPlan({ manifests, defaultSource: location, openSource: sourceOpenerFrom(config, values, warn), workDir: config.cacheDir, onWarning: warn });
  const problems = planReport(plan);
  if (reportHasProblems(problems)) {
    const all = [...problems.problems, ...problems.clusterStacks.flatMap((s) => [...s.problems, ...s.releases.flatMap((r) => r.problems)]), ...problems.clusters.flatMap((c) => c.problems)];
    throw new InputError(all.map((message) => ({ message })), `nothing was rendered or written:\n  ${all.join('\n  ')}`);
  }

  const publisher = createPublisher(values, config, io, commitTemplate);
  const helm = createHelmDependencies({ ...(config.helmBinary ? { configured: config.helmBinary } : {}), pathEnv: config.pathEnv, workDir: path.join(config.cacheDir, 'helm') });
  const previous = await publisher.readPrevious();
  const showProgress = io.isTty && !values.json;
  const outcome = await renderOutput(plan, helm, {
    secrets: values.secrets as SecretPolicy,
    previous,
    ...(gitops ? { gitops } : {}),
    ...(readmeTemplate !== undefined ? { readmeTemplate } : {}),
    ...(showProgress ? { onProgress: (progress: RenderProgress) => io.stderr(`\rrendering: releases ${progress.releasesDone}/${progress.releasesTotal}, clusters ${progress.clustersDone}/${progress.clustersTotal}   `) } : {}),
  });
  if (showProgress) io.stderr('\n');
  const changes = compareTrees(previous, outcome.tree);
  const change = summarizeChanges(changes, outcome.provenance.inputDigest);
  if (values['pull-request']) change.pullRequest = { title: change.title, body: renderPullRequestBody(changes, outcome.summary, prTemplate) };
  const result = await publisher.publish(outcome.tree, change);

  const report: RenderReport = {
    target: publisher.target,
    changed: result.changed,
    commit: result.changed ? result.revision : null,
    ...(result.pullRequest ? { pullRequest: result.pullRequest } : {}),
    files: { written: result.written, removed: result.removed },
    withheld: outcome.withheld.map(toReportEntry),
    summary: result.changed ? change.title : 'nothing changed',
    units: { rendered: outcome.stats.unitsRendered, reused: outcome.stats.unitsReused },
    helmProcesses: helm.processesSpawned(),
    warnings,
  };
  io.stdout(values.json ? `${JSON.stringify(report, null, 2)}\n` : formatRenderReport(report, change.body));
  return EXIT_OK;
}

/** The wiring options from the flags; undefined for --gitops none. Checked again (fully) before rendering. */
function wiringFromFlags(values: { gitops: string; 'gitops-url'?: string | undefined; 'gitops-namespace'?: string | undefined; 'gitops-name': string; 'gitops-secret'?: string | undefined; git?: string | undefined; oci?: string | undefined; branch: string; path: string }): WiringOptions | undefined {
  const engine = parseGitOpsEngine(values.gitops);
  if (engine === 'none') return undefined;
  const secret = values['gitops-secret'] ? { secretName: values['gitops-secret'] } : {};
  const base = { engine, name: values['gitops-name'], namespace: values['gitops-namespace'] ?? (engine === 'flux' ? 'flux-system' : 'argocd') };
  if (values.oci) {
    const reference = parseOciArtifactReference(values.oci);
    return { ...base, source: { kind: 'oci', url: `oci://${reference.registry}/${reference.repository}`, tag: reference.tag, ...secret } };
  }
  const url = values['gitops-url'] ?? (values.git && isUrl(values.git) ? values.git : undefined);
  if (!url) throw new UsageError(`--gitops ${engine} needs --gitops-url: the URL ${engine === 'flux' ? 'Flux' : 'Argo CD'} fetches the rendered tree from`);
  return { ...base, source: { kind: 'git', url, branch: values.branch, path: values.path, ...secret } };
}

function toReportEntry(entry: WithheldEntry): RenderReport['withheld'][number] {
  return { kind: entry.kind, namespace: entry.namespace, name: entry.name, reason: entry.reason, previousOutputKept: entry.previousKept };
}

interface OutputFlags {
  output?: string | undefined;
  git?: string | undefined;
  oci?: string | undefined;
  'oci-source'?: string | undefined;
  'plain-http'?: boolean | undefined;
  'pull-request': boolean;
  'pr-branch'?: string | undefined;
  'pr-when-unnecessary': string;
  'github-repo'?: string | undefined;
  branch: string;
  path: string;
}

function createPublisher(values: OutputFlags, config: Readonly<Config>, io: CliIo, messageTemplate: string | undefined): Publisher {
  if (values.output) return new DirectoryPublisher(path.resolve(io.cwd, values.output));
  if (values.oci) {
    return new OciArtifactPublisher({
      reference: values.oci,
      plainHttp: values['plain-http'] ?? false,
      tempDir: config.cacheDir,
      ...(values['oci-source'] ? { source: values['oci-source'] } : {}),
      ...(config.registryUsername && config.registryPassword ? { credentials: { username: config.registryUsername, password: config.registryPassword } } : {}),
    });
  }
  const repository = isUrl(values.git!) ? values.git! : path.resolve(io.cwd, values.git!);
  if (values['pull-request']) {
    return new PullRequestPublisher({
      git: {
        repository,
        baseBranch: values.branch,
        path: values.path,
        workDir: path.join(config.cacheDir, 'git-pr', sha256Hex(`${repository}\n${values.branch}\n${values.path}`).slice(0, 16)),
        author: { name: config.gitAuthorName, email: config.gitAuthorEmail },
        env: config.childEnv,
        ...(config.gitToken ? { token: config.gitToken } : {}),
        ...(messageTemplate !== undefined ? { messageTemplate } : {}),
      },
      github: { ...(config.githubApiUrl ? { baseUrl: config.githubApiUrl } : {}), ...(config.githubToken ? { token: config.githubToken } : {}), ...githubRepository(values['github-repo']) },
      whenUnnecessary: values['pr-when-unnecessary'] as 'close' | 'leave',
      ...(values['pr-branch'] ? { branch: values['pr-branch'] } : {}),
    });
  }
  return new GitPublisher({
    repository,
    branch: values.branch,
    path: values.path,
    workDir: path.join(config.cacheDir, 'git', sha256Hex(`${repository}\n${values.branch}`).slice(0, 16)),
    author: { name: config.gitAuthorName, email: config.gitAuthorEmail },
    env: config.childEnv,
    ...(config.gitToken ? { token: config.gitToken } : {}),
    ...(messageTemplate !== undefined ? { messageTemplate } : {}),
  });
}

function githubRepository(value: string | undefined): { owner?: string; repo?: string } {
  if (value === undefined) return {};
  const match = /^([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+)$/.exec(value);
  if (!match) throw new UsageError(`--github-repo must be <owner>/<repo>, not "${value}"`);
  return { owner: match[1]!, repo: match[2]! };
}

function isUrl(value: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(value) || /^[^/]+@[^/]+:/.test(value);
}

async function readTemplate(file: string, cwd: string, flag: string): Promise<string> {
  try {
    return await readFile(path.resolve(cwd, file), 'utf8');
  } catch (error) {
    throw new UsageError(`${flag} ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}

function formatRenderReport(report: RenderReport, body: string): string {
  const lines: string[] = [];
  if (report.changed) {
    lines.push(`${report.summary}`);
    if (body) lines.push(body);
    lines.push(`${report.files.written.length} files written, ${report.files.removed.length} removed in ${report.target}${report.commit ? ` (${report.commit.startsWith('sha256:') ? report.commit : `commit ${report.commit.slice(0, 12)}`})` : ''}`);
    if (report.pullRequest) lines.push(`Pull request: ${report.pullRequest}`);
  } else {
    lines.push(`Nothing changed: ${report.target} already holds this render.`);
    for (const entry of report.withheld) lines.push(`- Withheld ${entry.kind} ${entry.namespace}/${entry.name}: ${entry.reason}${entry.previousOutputKept ? ' (previous output kept)' : ''}`);
  }
  lines.push(`Units: ${report.units.rendered} rendered, ${report.units.reused} unchanged; helm processes: ${report.helmProcesses}.`);
  return `${lines.join('\n')}\n`;
}
