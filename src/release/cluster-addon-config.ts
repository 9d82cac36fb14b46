// clusteraddon.yaml: the stages of a multi-stage addon release and the hooks that run them.
//
// Read as the cluster-stack-operator reads it: `addonStages` is a map from hook name to a list of
// stages (Go `map[string][]*Stage`), and the operator registers three Cluster API lifecycle hooks
// (cmd/main.go): AfterControlPlaneInitialized, BeforeClusterUpgrade and AfterClusterUpgrade. It
// runs the stages of whichever hook fired, in list order; a key it has no hook for is simply never
// looked up. So every registered hook is accepted, and an unknown key is a warning (its stages are
// ignored, as the operator ignores them), never a reason to refuse the release. An empty key
// (`AfterClusterUpgrade:` with nothing under it) is a hook without stages, as in Go.
//
// A GitOps tree holds one steady state, not the steps towards it (see effectiveStages). The
// operator's AfterClusterUpgrade handler (as of its main branch) only answers success and does not
// start the hook's stages; a stack that lists stages there still states what a cluster should hold
// once an upgrade is complete, so they take part in that steady state as the newest hook.
import { decodeYamlDocument } from '../yaml/kube-yaml.js';
import type { Problem } from '../core/problem.js';
import { conditionSyntaxError } from '../core/addon-wait-conditions.js';
import { isRecord } from './release-metadata.js';

export const CLUSTER_ADDON_CONFIG_FILE = 'clusteraddon.yaml';
/**
 * The hooks the operator registers, in the order a cluster's life runs them (Cluster API runtime
 * hooks): AfterControlPlaneInitialized once the first control plane is up, BeforeClusterUpgrade
 * when spec.version changed and before anything is upgraded, AfterClusterUpgrade once the whole
 * cluster runs the new version. A later hook describes the newer state.
 */
const ADDON_HOOKS = ['AfterControlPlaneInitialized', 'BeforeClusterUpgrade', 'AfterClusterUpgrade'] as const;
type AddonHook = (typeof ADDON_HOOKS)[number];

interface WaitCondition {
  objects: { key: string; apiVersion: string; kind: string; name: string; namespace?: string }[];
  conditions: string;
}

interface AddonStageEntry {
  name: string;
  action: 'apply' | 'delete';
  waitForPreCondition?: WaitCondition;
  waitForPostCondition?: WaitCondition;
}

export interface ClusterAddonConfig {
  apiVersion?: string;
  addonStages: Partial<Record<AddonHook, AddonStageEntry[]>>;
}

/** A stage as rendered for GitOps: the steady state after the newest hook that mentions it. */
export interface EffectiveStage {
  name: string;
  action: 'apply' | 'delete';
  /** Position in the rendered order (0-based); GitOps wiring orders stages by it. */
  order: number;
}

const STAGE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export interface ParsedClusterAddonConfig {
  /** Absent when there are problems. */
  config?: ClusterAddonConfig;
  /** What makes the file unusable; the release is withheld. */
  problems: Problem[];
  /** What is ignored but does not stop the release (an unknown hook). */
  warnings: Problem[];
}

/**
 * Parses and validates clusteraddon.yaml; reports every problem and every warning with its path.
 * `checkSyntax` says whether a wait condition is valid CEL (a caller may remember its verdicts).
 */
export function parseClusterAddonConfig(
  text: string,
  source: string,
  checkSyntax: (expression: string) => string | undefined = conditionSyntaxError,
): ParsedClusterAddonConfig {
  let document: unknown;
  try {
    document = decodeYamlDocument(text).value;
  } catch (error) {
    return { problems: [{ source, message: `is not valid YAML: ${(error as Error).message}` }], warnings: [] };
  }
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  if (!isRecord(document) || !isRecord(document.addonStages)) {
    return {
      problems: [
        {
          source,
          path: 'addonStages',
          message: `is required: a map from hook (${ADDON_HOOKS.join(', ')}) to a list of stages`,
        },
      ],
      warnings,
    };
  }
  const addonStages: ClusterAddonConfig['addonStages'] = {};
  for (const [hook, entries] of Object.entries(document.addonStages)) {
    const hookPath = `addonStages.${hook}`;
    if (!(ADDON_HOOKS as readonly string[]).includes(hook)) {
      warnings.push({
        source,
        path: hookPath,
        message: `is not a hook the cluster-stack-operator runs (${ADDON_HOOKS.join(', ')}); its stages are ignored. Check the spelling if they should be rendered`,
      });
      continue;
    }
    if (entries === null) {
      addonStages[hook as AddonHook] = [];
      continue;
    }
    if (!Array.isArray(entries)) {
      problems.push({ source, path: hookPath, message: 'must be a list of stages' });
      continue;
    }
    const stages: AddonStageEntry[] = [];
    entries.forEach((entry: unknown, index) => {
      const stage = parseStage(entry, `${hookPath}[${index}]`, source, problems, warnings, checkSyntax);
      if (stage) stages.push(stage);
    });
    addonStages[hook as AddonHook] = stages;
  }
  if (problems.length > 0) return { problems, warnings };
  const config: ClusterAddonConfig = { addonStages };
  if (typeof document.apiVersion === 'string') config.apiVersion = document.apiVersion;
  return { config, problems, warnings };
}

/** One stage of a hook: its name, action and wait conditions (a condition that is not valid CEL only warns). */
function parseStage(
  entry: unknown,
  path: string,
  source: string,
  problems: Problem[],
  warnings: Problem[],
  checkSyntax: (expression: string) => string | undefined,
): AddonStageEntry | undefined {
  if (!isRecord(entry)) {
    problems.push({ source, path, message: 'must be a mapping with name and action' });
    return undefined;
  }
  const { name, action } = entry;
  if (typeof name !== 'string' || !STAGE_NAME.test(name)) {
    problems.push({
      source,
      path: `${path}.name`,
      message: `must be the name of a chart folder in the addon archive (lowercase, digits, "-"), found ${JSON.stringify(name ?? null)}`,
    });
    return undefined;
  }
  if (action !== 'apply' && action !== 'delete') {
    problems.push({
      source,
      path: `${path}.action`,
      message: `must be apply or delete, found ${JSON.stringify(action ?? null)}`,
    });
    return undefined;
  }
  const stage: AddonStageEntry = { name, action };
  for (const key of ['waitForPreCondition', 'waitForPostCondition'] as const) {
    if (entry[key] === undefined) continue;
    const condition = parseWaitCondition(entry[key], `${path}.${key}`, source, problems);
    if (!condition) continue;
    stage[key] = condition;
    // The operator only finds out when it evaluates; say so at load, without refusing the release.
    const syntax = checkSyntax(condition.conditions);
    if (syntax)
      warnings.push({
        source,
        path: `${path}.${key}.conditions`,
        message: `is not valid CEL (${syntax}): a lifecycle hook waiting on it can only time out. Fix the expression`,
      });
  }
  return stage;
}

function parseWaitCondition(
  value: unknown,
  path: string,
  source: string,
  problems: Problem[],
): WaitCondition | undefined {
  if (!isRecord(value) || !Array.isArray(value.objects) || typeof value.conditions !== 'string') {
    problems.push({
      source,
      path,
      message:
        'must have objects (a list of {key, apiVersion, kind, name, namespace}) and conditions (a CEL expression)',
    });
    return undefined;
  }
  const objects: WaitCondition['objects'] = [];
  value.objects.forEach((object: unknown, index) => {
    if (
      !isRecord(object) ||
      typeof object.key !== 'string' ||
      typeof object.apiVersion !== 'string' ||
      typeof object.kind !== 'string' ||
      typeof object.name !== 'string'
    ) {
      problems.push({ source, path: `${path}.objects[${index}]`, message: 'needs key, apiVersion, kind and name' });
      return;
    }
    const entry: WaitCondition['objects'][number] = {
      key: object.key,
      apiVersion: object.apiVersion,
      kind: object.kind,
      name: object.name,
    };
    if (typeof object.namespace === 'string') entry.namespace = object.namespace;
    objects.push(entry);
  });
  return { objects, conditions: value.conditions };
}

/**
 * The stages to render: the steady state after the newest hook that mentions each stage. Hooks are
 * read in lifecycle order (ADDON_HOOKS: AfterControlPlaneInitialized, BeforeClusterUpgrade,
 * AfterClusterUpgrade); stages are ordered by first appearance, and a stage's action is the one of
 * the last hook that lists it. So a stage an upgrade hook deletes is not rendered, and one only an
 * upgrade hook applies is, since a GitOps tree holds the state, not the steps towards it.
 */
export function effectiveStages(config: ClusterAddonConfig): EffectiveStage[] {
  const byName = new Map<string, EffectiveStage>();
  for (const hook of ADDON_HOOKS) {
    for (const entry of config.addonStages[hook] ?? []) {
      const existing = byName.get(entry.name);
      if (existing) existing.action = entry.action;
      else byName.set(entry.name, { name: entry.name, action: entry.action, order: byName.size });
    }
  }
  return [...byName.values()];
}
