// clusteraddon.yaml: the stages of a multi-stage addon release and the hooks that run them.
import * as yaml from 'js-yaml';
import type { Problem } from '../core/problem.js';
import { isRecord } from './release-metadata.js';

export const CLUSTER_ADDON_CONFIG_FILE = 'clusteraddon.yaml';
/** The hooks in the order a cluster's life runs them; later hooks describe the newer state. */
export const ADDON_HOOKS = ['AfterControlPlaneInitialized', 'BeforeClusterUpgrade'] as const;
export type AddonHook = (typeof ADDON_HOOKS)[number];

export interface WaitCondition {
  objects: { key: string; apiVersion: string; kind: string; name: string; namespace?: string }[];
  conditions: string;
}

export interface AddonStageEntry {
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

/** Parses and validates clusteraddon.yaml; reports every problem with its path. */
export function parseClusterAddonConfig(text: string, source: string): { config?: ClusterAddonConfig; problems: Problem[] } {
  let document: unknown;
  try {
    document = yaml.load(text);
  } catch (error) {
    return { problems: [{ source, message: `is not valid YAML: ${(error as Error).message}` }] };
  }
  const problems: Problem[] = [];
  if (!isRecord(document) || !isRecord(document.addonStages)) {
    return { problems: [{ source, path: 'addonStages', message: 'is required: a map from hook (AfterControlPlaneInitialized, BeforeClusterUpgrade) to a list of stages' }] };
  }
  const addonStages: ClusterAddonConfig['addonStages'] = {};
  for (const [hook, entries] of Object.entries(document.addonStages)) {
    const hookPath = `addonStages.${hook}`;
    if (!(ADDON_HOOKS as readonly string[]).includes(hook)) {
      problems.push({ source, path: hookPath, message: `is not a known hook; use one of ${ADDON_HOOKS.join(', ')}` });
      continue;
    }
    if (!Array.isArray(entries)) {
      problems.push({ source, path: hookPath, message: 'must be a list of stages' });
      continue;
    }
    const stages: AddonStageEntry[] = [];
    entries.forEach((entry: unknown, index) => {
      const path = `${hookPath}[${index}]`;
      if (!isRecord(entry)) {
        problems.push({ source, path, message: 'must be a mapping with name and action' });
        return;
      }
      const { name, action } = entry;
      if (typeof name !== 'string' || !STAGE_NAME.test(name)) {
        problems.push({ source, path: `${path}.name`, message: `must be the name of a chart folder in the addon archive (lowercase, digits, "-"), found ${JSON.stringify(name ?? null)}` });
        return;
      }
      if (action !== 'apply' && action !== 'delete') {
        problems.push({ source, path: `${path}.action`, message: `must be apply or delete, found ${JSON.stringify(action ?? null)}` });
        return;
      }
      const stage: AddonStageEntry = { name, action };
      for (const key of ['waitForPreCondition', 'waitForPostCondition'] as const) {
        if (entry[key] === undefined) continue;
        const condition = parseWaitCondition(entry[key], `${path}.${key}`, source, problems);
        if (condition) stage[key] = condition;
      }
      stages.push(stage);
    });
    addonStages[hook as AddonHook] = stages;
  }
  if (problems.length > 0) return { problems };
  const config: ClusterAddonConfig = { addonStages };
  if (typeof document.apiVersion === 'string') config.apiVersion = document.apiVersion;
  return { config, problems };
}

function parseWaitCondition(value: unknown, path: string, source: string, problems: Problem[]): WaitCondition | undefined {
  if (!isRecord(value) || !Array.isArray(value.objects) || typeof value.conditions !== 'string') {
    problems.push({ source, path, message: 'must have objects (a list of {key, apiVersion, kind, name, namespace}) and conditions (a CEL expression)' });
    return undefined;
  }
  const objects: WaitCondition['objects'] = [];
  value.objects.forEach((object: unknown, index) => {
    if (!isRecord(object) || typeof object.key !== 'string' || typeof object.apiVersion !== 'string' || typeof object.kind !== 'string' || typeof object.name !== 'string') {
      problems.push({ source, path: `${path}.objects[${index}]`, message: 'needs key, apiVersion, kind and name' });
      return;
    }
    const entry: WaitCondition['objects'][number] = { key: object.key, apiVersion: object.apiVersion, kind: object.kind, name: object.name };
    if (typeof object.namespace === 'string') entry.namespace = object.namespace;
    objects.push(entry);
  });
  return { objects, conditions: value.conditions };
}

/**
 * The stages to render, in order of first appearance across hooks (AfterControlPlaneInitialized
 * first). A stage's action is the one of the last hook that lists it: that hook describes the
 * newest state, and a GitOps tree holds the steady state, not the steps towards it.
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
