// Reads a fetched release directory into what rendering needs: metadata, the cluster-class chart,
// and the addons in their legacy (umbrella chart) or multi-stage (one chart per stage) format.
import { access, lstat, readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { InputError, type Problem } from '../core/problem.js';
import { clusterAddonChartName, clusterClassChartName, parseReleaseTag, type ReleaseTag } from '../core/release-tag.js';
import { formatDotVersion } from '../core/stack-version.js';
import {
  CLUSTER_ADDON_CONFIG_FILE,
  type ClusterAddonConfig,
  effectiveStages,
  parseClusterAddonConfig,
} from './cluster-addon-config.js';
import { fileDigest, treeDigest } from './content-digest.js';
import { METADATA_FILE, parseReleaseMetadata, type ReleaseMetadata } from './release-metadata.js';
import type { FetchedRelease } from './release-source.js';
import { assertInsideRelease } from './release-containment.js';
import { extractArchive } from './safe-extract.js';
import { celSyntaxMemo } from './cel-syntax-memo.js';
import { decodeYamlBytes, TextEncodingError } from '../yaml/text-encoding.js';
import { clusterClassApiVersion } from './cluster-class-api-version.js';
import { chartCrdApiVersions } from './chart-crds.js';

const LEGACY_VALUES_FILE = 'cluster-addon-values.yaml';
const STAGE_VALUES_FILE = 'overwrite.yaml';
/** Largest metadata, addon configuration or values file read from a release. */
const MAX_RELEASE_TEXT_BYTES = 4 * 1024 * 1024;

/** A chart ready for helm: an unpacked directory and the digest of what it came from. */
export interface ChartSource {
  dir: string;
  digest: string;
  /** The file or directory in the release it came from, for messages. */
  origin: string;
}

interface LegacyAddons {
  format: 'legacy';
  chart: ChartSource;
  /** cluster-addon-values.yaml: a Go template over .Cluster, .ControlPlane, .InfraCluster. */
  valuesTemplate: string;
}

interface AddonStage {
  name: string;
  action: 'apply' | 'delete';
  order: number;
  /** Absent for delete stages whose chart the archive no longer carries. */
  chart?: ChartSource;
  /** The stage's overwrite.yaml, a Go template like the legacy values file; empty when absent. */
  valuesTemplate: string;
}

interface MultiStageAddons {
  format: 'multi-stage';
  config: ClusterAddonConfig;
  /** Digest of the addon archive (or directory): equal between releases sharing an addon version. */
  digest: string;
  stages: AddonStage[];
}

export interface ReleaseContent {
  tag: string;
  parsed: ReleaseTag;
  digest: string;
  metadata: ReleaseMetadata;
  clusterClassChart: ChartSource;
  addons: LegacyAddons | MultiStageAddons;
  /** What was ignored without withholding the release (an unknown hook in clusteraddon.yaml), for the report. */
  warnings: Problem[];
  /** The API versions of the CRDs its charts ship in `crds/` folders (chart-crds.ts), sorted. */
  crdApiVersions: string[];
  /** The Cluster API version its ClusterClass is written in (cluster-class-api-version.ts), e.g. `cluster.x-k8s.io/v1beta2`. */
  clusterClassApiVersion: string;
}

/**
 * Loads a release. Archives are extracted safely into `workDir/charts/<digest>` (content-addressed,
 * so releases sharing a chart share the extraction). Throws InputError listing every problem.
 */
export async function loadRelease(fetched: FetchedRelease, workDir: string): Promise<ReleaseContent> {
  const parsed = parseReleaseTag(fetched.tag);
  const problems: Problem[] = [];
  const source = fetched.tag;
  const metadataText = await readOptional(path.join(fetched.dir, METADATA_FILE), fetched.dir, source);
  if (metadataText === undefined) {
    throw new InputError([
      {
        source,
        message: `has no ${METADATA_FILE}; every release must carry one (versions.clusterStack, versions.kubernetes, versions.components.clusterAddon)`,
      },
    ]);
  }
  const metadataResult = parseReleaseMetadata(metadataText, parsed);
  problems.push(...metadataResult.problems);

  const files = (await readdir(fetched.dir)).sort();
  const stackVersion = formatDotVersion(parsed.version);
  const classEntry = findChartEntry(files, clusterClassChartName(parsed), stackVersion);
  if (!classEntry) {
    problems.push({
      source,
      message: `has no cluster-class chart; expected ${clusterClassChartName(parsed)}-${stackVersion}.tgz (or an unpacked chart directory of that name)`,
    });
  }
  const addonVersion = metadataResult.metadata?.clusterAddonVersion;
  const addonEntry = findChartEntry(files, clusterAddonChartName(parsed), addonVersion);
  if (!addonEntry) {
    problems.push({
      source,
      message: `has no cluster-addon chart; expected ${clusterAddonChartName(parsed)}-${addonVersion ?? '<clusterAddon version>'}.tgz (or an unpacked directory of that name)`,
    });
  }
  if (problems.length > 0 || !metadataResult.metadata || !classEntry || !addonEntry) throw new InputError(problems);

  const clusterClassChart = await prepareChart(fetched.dir, classEntry, workDir, source);
  const configText = await readOptional(path.join(fetched.dir, CLUSTER_ADDON_CONFIG_FILE), fetched.dir, source);
  let addons: LegacyAddons | MultiStageAddons;
  const warnings: Problem[] = [];
  if (configText === undefined) {
    addons = {
      format: 'legacy',
      chart: await prepareChart(fetched.dir, addonEntry, workDir, source),
      valuesTemplate: (await readOptional(path.join(fetched.dir, LEGACY_VALUES_FILE), fetched.dir, source)) ?? '',
    };
  } else {
    addons = await prepareStages(fetched.dir, addonEntry, configText, workDir, source, warnings);
  }
  const chartDirs = [
    clusterClassChart.dir,
    ...(addons.format === 'legacy'
      ? [addons.chart.dir]
      : addons.stages.flatMap((stage) => (stage.chart ? [stage.chart.dir] : []))),
  ];
  const crdApiVersions = await chartCrdApiVersions(chartDirs);
  const classApiVersion = await clusterClassApiVersion(clusterClassChart.dir);
  return {
    tag: fetched.tag,
    parsed,
    digest: fetched.digest,
    metadata: metadataResult.metadata,
    clusterClassChart,
    addons,
    warnings,
    crdApiVersions,
    clusterClassApiVersion: classApiVersion,
  };
}

/** The release file for a chart: `<name>-<version>.tgz`, that directory, or the one entry starting with `<name>-`. */
function findChartEntry(files: string[], chartName: string, version: string | undefined): string | undefined {
  if (version !== undefined) {
    for (const candidate of [`${chartName}-${version}.tgz`, `${chartName}-${version}`]) {
      if (files.includes(candidate)) return candidate;
    }
  }
  const loose = files.filter(
    (file) => file.startsWith(`${chartName}-`) && (file.endsWith('.tgz') || !file.includes('.')),
  );
  return loose.length === 1 ? loose[0] : undefined;
}

async function prepareChart(releaseDir: string, entry: string, workDir: string, source: string): Promise<ChartSource> {
  const unpacked = await unpack(releaseDir, entry, workDir, source);
  const chartDir = await chartRoot(unpacked.dir, `${source}/${entry}`);
  return { dir: chartDir, digest: unpacked.digest, origin: `${source}/${entry}` };
}

/** A directory entry is used in place; a .tgz is extracted once per digest. */
async function unpack(
  releaseDir: string,
  entry: string,
  workDir: string,
  source: string,
): Promise<{ dir: string; digest: string }> {
  const full = path.join(releaseDir, entry);
  // Helm follows links in a chart directory: none may lead out of the release.
  await assertInsideRelease(full, releaseDir, `${source}/${entry}`);
  if ((await stat(full)).isDirectory()) return { dir: full, digest: await treeDigest(full) };
  const digest = await fileDigest(full);
  const destination = path.join(workDir, 'charts', digest.replace('sha256:', ''));
  if (!(await exists(destination))) await extractArchive(full, destination, `${source}/${entry}`);
  return { dir: destination, digest };
}

/** Helm packages a chart as `<name>/Chart.yaml`; accept that or Chart.yaml at the top. */
async function chartRoot(dir: string, origin: string): Promise<string> {
  if (await exists(path.join(dir, 'Chart.yaml'))) return dir;
  const entries = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory());
  if (entries.length === 1 && entries[0] && (await exists(path.join(dir, entries[0].name, 'Chart.yaml')))) {
    return path.join(dir, entries[0].name);
  }
  throw new InputError([
    {
      source: origin,
      message: 'is not a Helm chart: it has no Chart.yaml at its top (or in its one top-level folder)',
    },
  ]);
}

async function prepareStages(
  releaseDir: string,
  entry: string,
  configText: string,
  workDir: string,
  source: string,
  warnings: Problem[],
): Promise<MultiStageAddons> {
  // The wait conditions' syntax verdicts are remembered across runs: checking needs the CEL library,
  // which is most of a plan's start-up. A memo that cannot be read or written only means checking again.
  const memo = await celSyntaxMemo(workDir).catch(() => undefined);
  const parsedConfig = parseClusterAddonConfig(
    configText,
    `${source}/${CLUSTER_ADDON_CONFIG_FILE}`,
    memo ? (expression) => memo.check(expression) : undefined,
  );
  await memo?.save().catch(() => undefined);
  if (!parsedConfig.config) throw new InputError(parsedConfig.problems);
  warnings.push(...parsedConfig.warnings);
  const unpacked = await unpack(releaseDir, entry, workDir, source);
  const base = await stageBase(
    unpacked.dir,
    effectiveStages(parsedConfig.config).map((s) => s.name),
  );
  const stages: AddonStage[] = [];
  const problems: Problem[] = [];
  for (const stage of effectiveStages(parsedConfig.config)) {
    const stageDir = path.join(base, stage.name);
    const present = await exists(path.join(stageDir, 'Chart.yaml'));
    if (!present) {
      if (stage.action === 'apply')
        problems.push({
          source: `${source}/${entry}`,
          message: `has no chart folder "${stage.name}/" for the stage clusteraddon.yaml applies`,
        });
      stages.push({ ...stage, valuesTemplate: '' });
      continue;
    }
    stages.push({
      ...stage,
      chart: { dir: stageDir, digest: await treeDigest(stageDir), origin: `${source}/${entry}:${stage.name}` },
      valuesTemplate:
        (await readOptional(path.join(stageDir, STAGE_VALUES_FILE), unpacked.dir, `${source}/${entry}`)) ?? '',
    });
  }
  if (problems.length > 0) throw new InputError(problems);
  return { format: 'multi-stage', config: parsedConfig.config, digest: unpacked.digest, stages };
}

/** Stage folders sit at the archive root or inside its single top-level folder. */
async function stageBase(dir: string, names: string[]): Promise<string> {
  const entries = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  if (names.some((name) => entries.includes(name)) || entries.length !== 1 || !entries[0]) return dir;
  return path.join(dir, entries[0]);
}

/** A text file of the release, or undefined when absent; it must stay inside `root` and be of sane size. */
async function readOptional(file: string, root: string, source: string): Promise<string | undefined> {
  const label = `${source}/${path.relative(root, file)}`;
  try {
    await lstat(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  await assertInsideRelease(file, root, label);
  const { size } = await stat(file);
  if (size > MAX_RELEASE_TEXT_BYTES)
    throw new InputError([
      { source: label, message: `is ${size} bytes; release text files may hold at most ${MAX_RELEASE_TEXT_BYTES}` },
    ]);
  try {
    return decodeYamlBytes(await readFile(file));
  } catch (error) {
    if (!(error instanceof TextEncodingError)) throw error;
    throw new InputError([
      {
        source: `${label}:${error.line}`,
        message: `is not text Kubernetes reads: ${error.message}; the release must be fixed (save the file as UTF-8)`,
      },
    ]);
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}
