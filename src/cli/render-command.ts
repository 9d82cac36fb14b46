// `clusterstack render <files or dirs...> --release-source <src> (--output <dir> | --git <repo>)`
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { formatProblem, InputError } from '../core/problem.js';
import { planReport, reportHasProblems, retryableProblems } from '../plan/plan-report.js';
import type { Plan } from '../plan/build-plan.js';
import {
  describeEncryptedSecrets,
  type EncryptedSecretsReport,
  reportEncryptedSecrets,
} from '../output/encrypted-secrets-report.js';
import type { UnitRecord, WithheldEntry } from '../output/provenance.js';
import type { PublishedState } from '../output/published-state.js';
import { readPublishedTarget } from '../pipeline/published-target.js';
import type { HelmHookRecord } from '../output/helm-hooks-record.js';
import type {
  PipelineOptions,
  PipelineResult,
  renderAndPublish as RenderAndPublishTree,
} from '../pipeline/render-and-publish.js';
import type { HelmDependencies } from '../../renderers/helm-dependencies.js';
import { planMaterial, runFingerprint } from '../pipeline/run-fingerprint.js';
import { type SettledRunReport, settledRunReport } from '../pipeline/settled-run.js';
import { helmIdentity, toolIdentity } from '../pipeline/tool-identity.js';
import { isSettledRunStore, type SettledRun, type SettledRunStore } from '../../gitops/settled-run-record.js';
import type { Publisher, PublishResult } from '../../gitops/publisher.js';
import type { WiringOptions } from '../../gitops/wiring/render-wiring.js';
import type { SchedulerConfig } from '../cluster-requests/scheduler-config.js';
import type { Config } from '../config.js';
import { terminalProgress } from './render-progress.js';
import { endPhase } from './phase-timings.js';
import type { SecretPolicy } from '../render/secret-policy.js';
import { type CliIo, EXIT_OK, RemoteFailureError, UsageError } from './cli-io.js';
import { parseCommandLine } from './parse-command-line.js';
import type { ProtectedPath } from '../../gitops/protected-paths.js';
import { openOutputPublisher } from './open-output-publisher.js';
import { checkOutputSettings, localOutputDirectory, type OutputSettings } from './output-settings.js';
import { wiringOptionsFor } from './wiring-options.js';
import {
  SECRET_HELP,
  SECRET_OPTIONS,
  type SecretSettings,
  secretPolicyFrom,
  secretSettingsFrom,
} from './secret-options.js';
import {
  checkCacheDir,
  configFromFlags,
  HELM_TIMEOUT_HELP,
  HELM_TIMEOUT_OPTIONS,
  helmOptionsFrom,
  isRemoteLocation,
  resolveLocation,
  SOURCE_HELP,
  SOURCE_OPTIONS,
  planFromInputs,
} from './common-options.js';
import { readSchedulerConfigOption, SCHEDULER_CONFIG_HELP } from './scheduler-config-option.js';

export const RENDER_USAGE = `Usage: clusterstack render <files or dirs...> --release-source <source> (--output <dir> | --git <repo> | --oci <ref>) [options]

Renders the ClusterClass side of every kept release and the addons of every Cluster into plain
manifests, and writes them to a directory or commits them to a Git repository (only when they
changed). Argo CD or Flux apply them.

Output (one of):
  --output <dir>           write the tree into a directory that is empty, new or clusterstack's;
                           readers find it in <dir>/current (swapped in atomically)
  --git <path or URL>      commit the tree to a Git repository; a local path that does not exist is
                           created. HTTPS remotes take their token from CLUSTERSTACK_GIT_TOKEN
  --branch <name>          branch to commit to (default: main)
  --path <subdir>          directory inside the repository for the tree (default: the root)
  --force                  with --git <local work tree>: overwrite uncommitted edits to the files the
                           render writes there (refused by default, naming them)
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
${SECRET_HELP}
  --helm <path>            the helm binary (CLUSTERSTACK_HELM; default: bundled, then PATH)
${HELM_TIMEOUT_HELP}
  --readme-template <file> Handlebars template for the tree's README.md
  --commit-template <file> Handlebars template for the commit message
  --json                   print a JSON report (files written/removed, withheld, commit)
  --allow-mass-delete      publish even when the render removes all, or more than --max-delete-share,
                           of the published releases or clusters (refused by default)
  --allow-partial          publish everything else when some Clusters have input problems (a class
                           that cannot be read, a wrong topology.version): those Clusters are withheld,
                           their previous output and release kept (by default nothing is written)
  --max-delete-share <s>   the share one render may remove (default 50%; CLUSTERSTACK_MAX_DELETE_SHARE)
  --lock-timeout <d>       how long to wait for another run on the same output (default 60s; 0 fails
                           at once; CLUSTERSTACK_LOCK_TIMEOUT)
  --adopt-output           let --output take over a directory holding files it did not write (they are
                           left in place; the tree goes to <dir>/current)
  --full-render            render even when the inputs, releases, options and the target are exactly as
                           the last settled run left them (such a run otherwise ends at once: nothing
                           changed); unchanged units are still reused
${SCHEDULER_CONFIG_HELP}

GitOps wiring (written under flux/ or argocd/ in the tree):
  --gitops <engine>        none (default) | flux | argocd
  --gitops-url <url>       the URL Flux or Argo CD fetches the tree from (default: the --git URL)
  --gitops-namespace <ns>  where the wiring objects live (default: flux-system, or argocd)
  --gitops-name <name>     base name of the source and root objects (default: clusterstacks)
  --gitops-secret <name>   Flux: the Secret with clone or pull credentials (its name only)

Examples:
  # The quick start: the bundled example into a new local Git repository, one commit
  clusterstack render examples/quickstart/manifests --release-source examples/quickstart/releases --git out/gitops-repo

  # The same into a plain directory; readers find the tree in out/rendered/current
  clusterstack render examples/quickstart/manifests --release-source examples/quickstart/releases --output out/rendered

  # Releases from GitHub, committed to a remote repository with the Flux wiring (CLUSTERSTACK_GIT_TOKEN)
  clusterstack render fleet/ --release-source github:SovereignCloudStack/cluster-stacks \\
    --git https://github.com/example/management-gitops.git --path rendered --gitops flux

  # Releases from an OCI registry, proposed as a pull request instead of a commit (GITHUB_TOKEN)
  clusterstack render fleet/ --release-source oci://registry.scs.community/kaas/cluster-stacks \\
    --git https://github.com/example/management-gitops.git --pull-request --gitops argocd

  # The tree as an OCI artifact, for Flux's OCIRepository or an Argo CD OCI source
  clusterstack render fleet/ --release-source oci://registry.scs.community/kaas/cluster-stacks \\
    --oci oci://ghcr.io/example/management-manifests:main --gitops flux`;

interface RenderReport {
  target: string;
  changed: boolean;
  /** Commit sha (Git, pull request) or manifest digest (OCI); null when nothing changed. */
  commit: string | null;
  pullRequest?: string;
  files: { written: string[]; removed: string[] };
  withheld: {
    kind: 'release' | 'cluster' | 'provider' | 'layer';
    namespace: string;
    name: string;
    layer?: string;
    reason: string;
    previousOutputKept: boolean;
  }[];
  summary: string;
  units: { rendered: number; reused: number };
  /** With --secrets encrypt: the encrypted Secrets per unit (names only) and what this run encrypted. */
  secrets?: EncryptedSecretsReport;
  helmProcesses: number;
  /** With --scheduler-config: every ClusterRequest's phase, the cluster it has and why (Pending: refused or waiting). */
  clusterRequests?: {
    namespace: string;
    name: string;
    purpose: string;
    phase: string;
    reason: string;
    cluster: string | null;
    message: string;
  }[];
  /** With --scheduler-config: requests outside its `selectors.requests`, left alone. */
  clusterRequestsNotOurs?: { namespace: string; name: string; message: string }[];
  /** Every helm hook object of the published units (present when there is one) and what became of it. */
  helmHooks?: ({ unit: string } & HelmHookRecord)[];
  warnings: string[];
  /**
   * Present when the run ended without rendering: its fingerprint (inputs, releases, options, tool
   * versions) equals that of the last settled run and the target provably still holds what that run left.
   */
  noop?: { fingerprint: string; reason: string };
}

const RENDER_OPTIONS = {
  ...SOURCE_OPTIONS,
  ...HELM_TIMEOUT_OPTIONS,
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
  ...SECRET_OPTIONS,
  helm: { type: 'string' },
  'readme-template': { type: 'string' },
  'commit-template': { type: 'string' },
  gitops: { type: 'string', default: 'none' },
  'gitops-url': { type: 'string' },
  'gitops-namespace': { type: 'string' },
  'gitops-name': { type: 'string', default: 'clusterstacks' },
  'gitops-secret': { type: 'string' },
  json: { type: 'boolean', default: false },
  'allow-mass-delete': { type: 'boolean', default: false },
  'allow-partial': { type: 'boolean', default: false },
  'max-delete-share': { type: 'string' },
  'lock-timeout': { type: 'string' },
  'adopt-output': { type: 'boolean', default: false },
  force: { type: 'boolean', default: false },
  'scheduler-config': { type: 'string' },
  'full-render': { type: 'boolean', default: false },
} as const;

type RenderFlags = ReturnType<typeof parseRenderFlags>['values'];

/** The flag values and settings of one render, read and checked before anything is planned. */
interface RenderSettings {
  output: OutputSettings;
  secretPolicy: SecretPolicy;
  secretSettings: SecretSettings;
  gitops: WiringOptions | undefined;
  config: Readonly<Config>;
  location: string;
  readmeTemplate: string | undefined;
  commitTemplate: string | undefined;
  prTemplate: string | undefined;
  scheduler: SchedulerConfig | undefined;
}

/** One render once its target is open and its plan made: what reporting and publishing share. */
interface RenderRun {
  values: RenderFlags;
  io: CliIo;
  config: Readonly<Config>;
  publisher: Publisher;
  settledRuns: (Publisher & SettledRunStore) | undefined;
  plan: Plan;
  pipelineOptions: PipelineOptions;
  fingerprint: string | undefined;
  warnings: string[];
  warn: (message: string) => void;
}

/** Renders the inputs and publishes the tree, or reports that the last settled run already did; the exit code. */
export async function renderCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseRenderFlags(args);
  const settings = await renderSettings(values, io);
  const { config, output } = settings;
  const warnings: string[] = [];
  const warn = (message: string): void => {
    warnings.push(message);
    if (!values.json) io.stderr(`warning: ${message}\n`);
  };
  const publisher = await openPublisher(values, positionals, settings, io);
  const outputDir = localOutputDirectory(output, io.cwd);
  const settledRuns = isSettledRunStore(publisher) ? publisher : undefined;
  // A run that will render for sure (asked to, or no settled run recorded that it could match)
  // loads the pipeline and checks helm while it reads the inputs and releases, not after.
  const certainRender = values['full-render'] || (settledRuns ? (await settledRuns.hasSettledRun?.()) === false : true);
  let renderer: Promise<Renderer> | undefined;
  const loadRenderer = (): Promise<Renderer> => (renderer ??= startRenderer(config, certainRender));
  if (certainRender) loadRenderer().catch(() => undefined);

  // Observe and decide; any problem with the inputs stops here, before anything is written.
  // The scheduler configuration is no input object, even inside an input directory.
  const schedulerFile = values['scheduler-config'] ? [path.resolve(io.cwd, values['scheduler-config'])] : [];
  const plan = await planFromInputs(positionals, settings.location, config, values, io, warn, [
    ...(outputDir ? [outputDir] : []),
    ...schedulerFile,
  ]);
  endPhase('inputs-and-releases');
  refusePlanProblems(plan, values['allow-partial']);

  const pipelineOptions = pipelineOptionsFor(values, settings);
  // Everything that decides what this run publishes, known before rendering (run-fingerprint.ts).
  const fingerprint = settledRuns
    ? runFingerprint({
        tool: toolIdentity(),
        helm: helmIdentity({ configured: config.helmBinary, pathEnv: config.pathEnv }),
        plan: planMaterial(plan),
        options: pipelineOptions,
        target: publisher.target,
      })
    : undefined;
  const run: RenderRun = {
    values,
    io,
    config,
    publisher,
    settledRuns,
    plan,
    pipelineOptions,
    fingerprint,
    warnings,
    warn,
  };
  // One run at a time per target, from reading what is there to replacing it.
  const lock = await publisher.lock?.({ timeoutMs: config.lockTimeoutMs, command: 'clusterstack render' });
  try {
    // The published state, read once: the settled-run record first, the tree only when not settled.
    let loaded: Renderer | undefined;
    const target = await readPublishedTarget(publisher, values['full-render'] ? undefined : fingerprint, async () => {
      loaded = await loadRenderer();
      endPhase('render-modules');
    });
    if (target.settled) return reportUnchanged(run, target.settled);
    endPhase('read-previous');
    return await renderAndPublish(run, loaded ?? (await loadRenderer()), target.state);
  } finally {
    await lock?.release();
  }
}

/** The command line, with the two things a render cannot do without: inputs and a release source. */
function parseRenderFlags(args: string[]) {
  const parsed = parseCommandLine('render', { args, allowPositionals: true, options: RENDER_OPTIONS });
  if (parsed.positionals.length === 0) throw new UsageError('render needs at least one input file or directory');
  if (!parsed.values['release-source'])
    throw new UsageError('render needs --release-source (a directory, github:owner/repo or oci://registry/repo)');
  return parsed;
}

/** Every flag checked and read (output, secrets, wiring, config, templates, scheduler); a usage error names the flag. */
async function renderSettings(values: RenderFlags, io: CliIo): Promise<RenderSettings> {
  const output: OutputSettings = {
    output: values.output,
    git: values.git,
    oci: values.oci,
    ociSource: values['oci-source'],
    plainHttp: values['plain-http'],
    pullRequest: values['pull-request'],
    prBranch: values['pr-branch'],
    prWhenUnnecessary: values['pr-when-unnecessary'],
    githubRepo: values['github-repo'],
    branch: values.branch,
    path: values.path,
  };
  checkOutputSettings(output);
  if (values.force && !output.git) throw new UsageError('--force applies to --git (a local work tree) only');
  const secretPolicy = secretPolicyFrom(values.secrets);

  const secretSettings = await secretSettingsFrom(secretPolicy, values, io.env, io.cwd);
  const gitops = wiringOptionsFor(
    output,
    {
      gitops: values.gitops,
      gitopsUrl: values['gitops-url'],
      gitopsNamespace: values['gitops-namespace'],
      gitopsName: values['gitops-name'],
      gitopsSecret: values['gitops-secret'],
      sopsSecret: secretSettings.sopsSecret,
    },
    true,
  );
  const config = configFromFlags(values, io);
  await checkCacheDir(config, values, io);
  const location = resolveLocation(values['release-source']!, io.cwd, '--release-source');
  const readmeTemplate = await readTemplate(values['readme-template'], io.cwd, '--readme-template');
  const commitTemplate = await readTemplate(values['commit-template'], io.cwd, '--commit-template');
  const prTemplate = await readTemplate(values['pr-template'], io.cwd, '--pr-template');
  const scheduler = await readSchedulerConfigOption(values['scheduler-config'], io.cwd);
  return {
    output,
    secretPolicy,
    secretSettings,
    gitops,
    config,
    location,
    readmeTemplate,
    commitTemplate,
    prTemplate,
    scheduler,
  };
}

/** The publisher of the chosen output, guarded against writing over the inputs or the release source. */
async function openPublisher(
  values: RenderFlags,
  positionals: string[],
  settings: RenderSettings,
  io: CliIo,
): Promise<Publisher> {
  const protectedPaths: ProtectedPath[] = [
    ...positionals.map((input) => ({ label: 'input', path: path.resolve(io.cwd, input) })),
    ...(isRemoteLocation(settings.location) ? [] : [{ label: 'release source', path: settings.location }]),
  ];
  return openOutputPublisher(settings.output, settings.config, io.cwd, settings.commitTemplate, {
    protectedPaths,
    adoptOutput: values['adopt-output'],
    force: values.force,
  });
}

/** What the pipeline is told beyond the plan: secrets, wiring, templates, guards and the scheduler. */
function pipelineOptionsFor(values: RenderFlags, settings: RenderSettings): PipelineOptions {
  const { secretPolicy, secretSettings, gitops, readmeTemplate, prTemplate, scheduler } = settings;
  return {
    secrets: secretPolicy,
    ...(secretSettings.encryption ? { encryption: secretSettings.encryption } : {}),
    ...(gitops ? { gitops } : {}),
    ...(readmeTemplate !== undefined ? { readmeTemplate } : {}),
    ...(values['pull-request'] ? { pullRequest: prTemplate !== undefined ? { template: prTemplate } : {} } : {}),
    massDeletion: { allow: values['allow-mass-delete'], maxShare: settings.config.maxDeleteShare },
    heldClusters: values['allow-partial'] ? 'withhold' : 'refuse',
    ...(scheduler ? { scheduler } : {}),
  };
}

/** The last settled run's fingerprint matches and the target still holds what it left: a render would change nothing. */
function reportUnchanged({ publisher, warnings, io, values }: RenderRun, settled: SettledRun): number {
  const recorded = settled.report as Partial<SettledRunReport>;
  const report: RenderReport = {
    target: publisher.target,
    changed: false,
    commit: null,
    files: { written: [], removed: [] },
    withheld: [],
    summary: 'nothing changed',
    units: { rendered: 0, reused: typeof recorded.units === 'number' ? recorded.units : 0 },
    ...(recorded.secrets ? { secrets: recorded.secrets } : {}),
    helmProcesses: 0,
    ...(recorded.clusterRequests ? { clusterRequests: recorded.clusterRequests } : {}),
    ...(recorded.clusterRequestsNotOurs ? { clusterRequestsNotOurs: recorded.clusterRequestsNotOurs } : {}),
    warnings,
    noop: {
      fingerprint: settled.fingerprint,
      reason:
        'the inputs, releases, options and tool versions are those of the last settled run, and the target still holds what it left: not rendered again',
    },
  };
  io.stdout(values.json ? `${JSON.stringify(report, null, 2)}\n` : formatRenderReport(report, ''));
  return EXIT_OK;
}

/** Loads the pipeline and helm's seam; with `checkHelm`, starts finding and checking helm too. */
async function startRenderer(config: Readonly<Config>, checkHelm: boolean): Promise<Renderer> {
  // Loaded only when rendering: a run that changes nothing never needs helm or the pipeline.
  const [{ createHelmDependencies }, { renderAndPublish: renderAndPublishTree }] = await Promise.all([
    import('../../renderers/helm-dependencies.js'),
    import('../pipeline/render-and-publish.js'),
  ]);
  const helm = createHelmDependencies(helmOptionsFrom(config));
  if (checkHelm) helm.prepare();
  return { helm, renderAndPublishTree };
}

/** Renders and publishes the plan, records the run as settled, and reports what it did. */
async function renderAndPublish(
  run: RenderRun,
  { helm, renderAndPublishTree }: Renderer,
  published: PublishedState,
): Promise<number> {
  const { publisher, settledRuns, fingerprint, warnings, warn, io, values } = run;
  // Progress only for a person at a terminal: --json output is read by programs.
  const progress = io.isTty && !values.json ? terminalProgress(io.stderr) : undefined;
  const warningsBefore = warnings.length;
  const rendered = await renderAndPublishTree(
    run.plan,
    published,
    {
      renderer: helm,
      publish: async (tree, change) => {
        // The record of an earlier settled run never outlives the target state it describes.
        await settledRuns?.forgetSettledRun();
        endPhase('render', `${helm.processesSpawned()} helm processes`);
        const result = await publisher.publish(tree, change);
        endPhase('publish');
        return result;
      },
      ...(publisher.prestage
        ? { prestage: (files: Iterable<readonly [string, string]>) => publisher.prestage!(files) }
        : {}),
      // The CLI tells people through its report: notes become warnings there.
      logger: {
        info: () => undefined,
        warn: (fields, message) => warn(typeof fields['note'] === 'string' ? fields['note'] : message),
      },
    },
    { ...run.pipelineOptions, ...(progress ? { onProgress: progress.onProgress } : {}) },
  );
  progress?.finish();
  if (rendered.status !== 'published') throw new Error('internal error: a CLI render was aborted');
  const secrets = reportEncryptedSecrets(published.provenance?.units ?? [], rendered.outcome.provenance.units);
  const settledReport = settledRunReport(rendered, warnings.length - warningsBefore);
  if (settledRuns && fingerprint && settledReport) {
    try {
      await settledRuns.recordSettledRun({ fingerprint, report: { ...settledReport } }, rendered.published.revision);
    } catch (error) {
      warn(`could not record this run as settled (${(error as Error).message}); the next run renders in full`);
    }
  }
  // Said on every run that uses such a helm; not part of what a settled run records.
  const helmWarning = helm.binary()?.warning;
  if (helmWarning) warn(helmWarning);
  const report = renderedReport(run, rendered, secrets, helm.processesSpawned());
  io.stdout(values.json ? `${JSON.stringify(report, null, 2)}\n` : formatRenderReport(report, rendered.change.body));
  return EXIT_OK;
}

/** The report of a run that rendered: what it wrote, withheld and reused, and the requests' phases. */
function renderedReport(
  { publisher, warnings }: RenderRun,
  { outcome, change, published: result }: Extract<PipelineResult<PublishResult>, { status: 'published' }>,
  secrets: EncryptedSecretsReport | undefined,
  helmProcesses: number,
): RenderReport {
  return {
    target: publisher.target,
    changed: result.changed,
    commit: result.changed ? result.revision : null,
    ...(result.pullRequest ? { pullRequest: result.pullRequest } : {}),
    files: { written: result.written, removed: result.removed },
    withheld: outcome.withheld.map(toReportEntry),
    summary: result.changed ? change.title : 'nothing changed',
    units: { rendered: outcome.stats.unitsRendered, reused: outcome.stats.unitsReused },
    ...(secrets ? { secrets } : {}),
    helmProcesses,
    ...(outcome.summary.clusterRequests ? { clusterRequests: outcome.summary.clusterRequests.requests } : {}),
    ...(outcome.summary.clusterRequests?.notOurs
      ? { clusterRequestsNotOurs: outcome.summary.clusterRequests.notOurs }
      : {}),
    ...helmHooksReport(outcome.provenance.units),
    warnings,
  };
}

/**
 * Stops the run before anything is read from the target or written: a release source that failed
 * (exit 3, retry), or problems with the inputs (exit 1). With --allow-partial a Cluster's own
 * problems withhold that Cluster alone (its previous output kept); anything else still stops it.
 */
function refusePlanProblems(plan: Plan, allowPartial: boolean): void {
  const remote = retryableProblems(plan);
  if (remote.length > 0)
    throw new RemoteFailureError(
      `nothing was rendered or written: a release source failed; retry later:\n  ${remote.map(formatProblem).join('\n  ')}`,
    );
  const problems = planReport(plan);
  if (!reportHasProblems(allowPartial ? { ...problems, clusters: [] } : problems)) return;
  const clusterProblems = problems.clusters.flatMap((c) => c.problems);
  const all = [
    ...problems.problems,
    ...problems.clusterStacks.flatMap((s) => [...s.problems, ...s.releases.flatMap((r) => r.problems)]),
    ...clusterProblems,
  ];
  const hint =
    clusterProblems.length > 0 && !allowPartial
      ? `\n(--allow-partial publishes everything else and keeps the previous output of the Clusters named here)`
      : '';
  throw new InputError(
    all.map((message) => ({ message })),
    `nothing was rendered or written:\n  ${all.join('\n  ')}${hint}`,
  );
}

/** What a render needs beyond the plan: helm's seam and the pipeline, loaded on demand. */
interface Renderer {
  helm: HelmDependencies;
  renderAndPublishTree: typeof RenderAndPublishTree;
}

/** The report's helm hooks: one entry per hook object per unit, with the unit's directory. */
function helmHooksReport(units: UnitRecord[]): Pick<RenderReport, 'helmHooks'> {
  const hooks = units.flatMap((unit) => (unit.hooks ?? []).map((hook) => ({ unit: unit.dir, ...hook })));
  return hooks.length > 0 ? { helmHooks: hooks } : {};
}

function toReportEntry(entry: WithheldEntry): RenderReport['withheld'][number] {
  return {
    kind: entry.kind,
    namespace: entry.namespace,
    name: entry.name,
    ...(entry.layer ? { layer: entry.layer } : {}),
    reason: entry.reason,
    previousOutputKept: entry.previousKept,
  };
}

/** The template a flag names, or undefined without the flag; a file that cannot be read is a usage error. */
async function readTemplate(file: string | undefined, cwd: string, flag: string): Promise<string | undefined> {
  if (!file) return undefined;
  try {
    return await readFile(path.resolve(cwd, file), 'utf8');
  } catch (error) {
    throw new UsageError(
      `${flag} ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
}

function formatRenderReport(report: RenderReport, body: string): string {
  const lines: string[] = [];
  if (report.changed) {
    lines.push(`${report.summary}`);
    if (body) lines.push(body);
    lines.push(
      `${report.files.written.length} files written, ${report.files.removed.length} removed in ${report.target}${report.commit ? ` (${report.commit.startsWith('sha256:') ? report.commit : `commit ${report.commit.slice(0, 12)}`})` : ''}`,
    );
    if (report.pullRequest) lines.push(`Pull request: ${report.pullRequest}`);
  } else {
    lines.push(`Nothing changed: ${report.target} already holds this render.`);
    if (report.noop)
      lines.push(
        'Not rendered again: the inputs, releases, options and tool versions are those of the last settled run, and the target still holds what it left (--full-render renders anyway).',
      );
    for (const entry of report.withheld)
      lines.push(
        `- Withheld ${entry.kind} ${entry.namespace}/${entry.name}${entry.layer ? `/${entry.layer}` : ''}: ${entry.reason}${entry.previousOutputKept ? ' (previous output kept)' : ''}`,
      );
  }
  lines.push(
    `Units: ${report.units.rendered} rendered, ${report.units.reused} unchanged; helm processes: ${report.helmProcesses}.`,
  );
  if (report.secrets) lines.push(describeEncryptedSecrets(report.secrets));
  return `${lines.join('\n')}\n`;
}
