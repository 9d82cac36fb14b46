// What clusterctl and the cluster-api-operator do to a provider's components before applying them,
// done here to the objects we write instead: the target namespace (with the references that name
// it), clusterctl's provider labels, image overrides, the operator's deployment and manager
// customisation, and its patches in order. Pure: objects in, objects out; a spec that cannot be
// applied (a container that does not exist, a patch that fails) throws ProviderRenderError.
import jsonPatch from 'fast-json-patch';
import type {
  ProviderDeploymentSpec,
  ProviderManagerSpec,
  ProviderPatch,
  ProviderSpec,
} from '../api/provider-types.js';
import type { KubeObject } from '../api/types.js';
import { decodeYamlDocuments, YamlDecodeError } from '../yaml/kube-yaml.js';
import { matchesLabelSelector, parseLabelSelector } from '../core/label-selector.js';
import { compareText } from '../core/compare-text.js';
import { Failure } from '../core/failure.js';

/** clusterctl's labels on every provider object. */
const PROVIDER_LABEL = 'cluster.x-k8s.io/provider';
const CLUSTERCTL_LABEL = 'clusterctl.cluster.x-k8s.io';
const MANAGER_CONTAINER = 'manager';
const DEFAULT_VERBOSITY = 1;

/** A provider spec that cannot be applied to its components; the message names what to fix. */
export class ProviderRenderError extends Failure {
  constructor(message: string) {
    super('fix-input', message);
    this.name = 'ProviderRenderError';
  }
}

/** clusterctl's image overrides (`images:` in its configuration): per component label, or `all`. */
export type ImageOverrides = Record<string, { repository?: string; tag?: string }>;

export interface CustomizeOptions {
  spec: ProviderSpec;
  targetNamespace: string;
  /** clusterctl's `cluster.x-k8s.io/provider` value, e.g. `infrastructure-docker`. */
  manifestLabel: string;
  /** Whether a kind is cluster-scoped (from the CRDs in the components and the built-in kinds). */
  isClusterScoped: (object: KubeObject) => boolean;
  images?: ImageOverrides;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function record(parent: Record<string, unknown>, key: string): Record<string, unknown> {
  if (!isRecord(parent[key])) parent[key] = {};
  return parent[key] as Record<string, unknown>;
}

/** Applies every customisation to copies of `objects`, in the order clusterctl and the operator do. */
export function customizeComponents(objects: KubeObject[], options: CustomizeOptions): KubeObject[] {
  let result = objects.map((object) => structuredClone(object));
  result = result.map((object) => fixNamespace(object, options));
  for (const object of result) {
    const labels = (object.metadata.labels ??= {});
    labels[PROVIDER_LABEL] = options.manifestLabel;
    labels[CLUSTERCTL_LABEL] = '';
  }
  if (options.images) for (const object of result) overrideImages(object, options.manifestLabel, options.images);
  const deployments = result.filter((object) => object.kind === 'Deployment');
  for (const deployment of deployments) {
    let deploymentSpec = options.spec.deployment;
    let managerSpec = options.spec.manager;
    // As the operator: with several Deployments, only the `ca*-controller-manager` one takes the
    // top-level settings; the others take theirs from additionalDeployments, or none.
    if (deployments.length > 1 && !/^ca.*-controller-manager$/.test(deployment.metadata.name)) {
      const extra = options.spec.additionalDeployments?.[deployment.metadata.name];
      if (!extra) continue;
      deploymentSpec = extra.deployment;
      managerSpec = extra.manager;
    }
    customizeDeployment(deployment, deploymentSpec, managerSpec);
  }
  if (options.spec.patches?.length) result = applyPatches(result, options.spec.patches);
  else if (options.spec.manifestPatches?.length) result = applyManifestPatches(result, options.spec.manifestPatches);
  return result;
}

/** clusterctl's fixTargetNamespace: every namespaced object, and every reference to the old namespace, in the target. */
function fixNamespace(object: KubeObject, options: CustomizeOptions): KubeObject {
  const target = options.targetNamespace;
  const kind = object.kind;
  if (kind === 'Namespace') {
    object.metadata.name = target;
    return object;
  }
  const old = object.metadata.namespace;
  if (!options.isClusterScoped(object)) object.metadata.namespace = target;
  const annotations = object.metadata.annotations;
  const injectFrom = annotations?.['cert-manager.io/inject-ca-from'];
  if (annotations && injectFrom?.includes('/'))
    annotations['cert-manager.io/inject-ca-from'] = `${target}/${injectFrom.slice(injectFrom.indexOf('/') + 1)}`;
  const body = object as Record<string, unknown>;
  if ((kind === 'ClusterRoleBinding' || kind === 'RoleBinding') && Array.isArray(body.subjects)) {
    for (const subject of body.subjects)
      if (isRecord(subject) && subject.kind === 'ServiceAccount') subject.namespace = target;
  }
  if (
    (kind === 'MutatingWebhookConfiguration' || kind === 'ValidatingWebhookConfiguration') &&
    Array.isArray(body.webhooks)
  ) {
    for (const webhook of body.webhooks) {
      const service = isRecord(webhook) && isRecord(webhook.clientConfig) ? webhook.clientConfig.service : undefined;
      if (isRecord(service)) service.namespace = target;
    }
  }
  if (
    kind === 'CustomResourceDefinition' &&
    isRecord(body.spec) &&
    isRecord(body.spec.conversion) &&
    isRecord(body.spec.conversion.webhook)
  ) {
    const clientConfig = body.spec.conversion.webhook.clientConfig;
    if (isRecord(clientConfig) && isRecord(clientConfig.service)) clientConfig.service.namespace = target;
  }
  if (kind === 'Certificate' && isRecord(body.spec) && Array.isArray(body.spec.dnsNames) && old) {
    body.spec.dnsNames = body.spec.dnsNames.map((name) =>
      typeof name === 'string' ? name.replace(`.${old}.svc`, `.${target}.svc`) : name,
    );
  }
  return object;
}

function podSpecOf(object: KubeObject): Record<string, unknown> | undefined {
  const spec = (object as Record<string, unknown>).spec;
  if (!isRecord(spec) || !isRecord(spec.template) || !isRecord(spec.template.spec)) return undefined;
  return spec.template.spec;
}

function containersOf(podSpec: Record<string, unknown> | undefined): Record<string, unknown>[] {
  return Array.isArray(podSpec?.containers) ? podSpec.containers.filter(isRecord) : [];
}

/** clusterctl's image override: the repository (all but the image's own name) and/or the tag. */
function overrideImages(object: KubeObject, component: string, images: ImageOverrides): void {
  if (object.kind !== 'Deployment' && object.kind !== 'DaemonSet') return;
  const override = { ...images.all, ...images[component] };
  if (!override.repository && !override.tag) return;
  const podSpec = podSpecOf(object);
  for (const container of [
    ...containersOf(podSpec),
    ...(Array.isArray(podSpec?.initContainers) ? podSpec.initContainers.filter(isRecord) : []),
  ]) {
    if (typeof container.image !== 'string') continue;
    const image = container.image.split('@')[0]!;
    const slash = image.lastIndexOf('/');
    const colon = image.lastIndexOf(':');
    const hasTag = colon > slash;
    const name = image.slice(slash + 1, hasTag ? colon : undefined);
    const repository = override.repository ?? (slash >= 0 ? image.slice(0, slash) : '');
    const tag = override.tag ?? (hasTag ? image.slice(colon + 1) : undefined);
    container.image = `${repository ? `${repository}/` : ''}${name}${tag ? `:${tag}` : ''}`;
  }
}

function setArg(args: unknown[], name: string, value: string): unknown[] {
  const index = args.findIndex((arg) => typeof arg === 'string' && arg.startsWith(`${name}=`));
  if (index >= 0) args[index] = `${name}=${value}`;
  else args.push(`${name}=${value}`);
  return args;
}

function customizeDeployment(
  deployment: KubeObject,
  deploymentSpec: ProviderDeploymentSpec | undefined,
  managerSpec: ProviderManagerSpec | undefined,
): void {
  const where = `Deployment ${deployment.metadata.namespace ?? ''}/${deployment.metadata.name}`;
  const spec = record(deployment as Record<string, unknown>, 'spec');
  const podSpec = record(record(spec, 'template'), 'spec');
  if (deploymentSpec) {
    if (deploymentSpec.replicas !== undefined) spec.replicas = deploymentSpec.replicas;
    if (deploymentSpec.affinity !== undefined) podSpec.affinity = deploymentSpec.affinity;
    if (deploymentSpec.nodeSelector !== undefined) podSpec.nodeSelector = deploymentSpec.nodeSelector;
    if (deploymentSpec.tolerations !== undefined) podSpec.tolerations = deploymentSpec.tolerations;
    if (deploymentSpec.serviceAccountName) podSpec.serviceAccountName = deploymentSpec.serviceAccountName;
    if (deploymentSpec.imagePullSecrets !== undefined) podSpec.imagePullSecrets = deploymentSpec.imagePullSecrets;
    for (const wanted of deploymentSpec.containers ?? []) {
      const container = containersOf(podSpec).find((candidate) => candidate.name === wanted.name);
      if (!container)
        throw new ProviderRenderError(
          `spec.deployment.containers: ${where} has no container "${wanted.name}" (it has ${
            containersOf(podSpec)
              .map((c) => c.name)
              .join(', ') || 'none'
          })`,
        );
      const args = Array.isArray(container.args) ? container.args : [];
      for (const [name, value] of Object.entries(wanted.args ?? {}).sort(([a], [b]) => compareText(a, b)))
        setArg(args, name, value);
      if (wanted.args) container.args = args;
      if (wanted.env) {
        const names = new Set(wanted.env.map((env) => env.name));
        container.env = [
          ...(Array.isArray(container.env)
            ? container.env.filter((env) => !(isRecord(env) && names.has(env.name)))
            : []),
          ...wanted.env,
        ];
      }
      if (wanted.resources !== undefined) container.resources = wanted.resources;
      if (wanted.imageUrl !== undefined) container.image = wanted.imageUrl;
      if (wanted.command !== undefined) container.command = wanted.command;
    }
  }
  if (managerSpec) {
    const containers = containersOf(podSpec);
    const manager = containers.find((container) => container.name === MANAGER_CONTAINER) ?? containers[0];
    if (!manager)
      throw new ProviderRenderError(`spec.manager: ${where} has no "${MANAGER_CONTAINER}" container to pass flags to`);
    manager.args = customizeManagerArgs(Array.isArray(manager.args) ? [...manager.args] : [], managerSpec, where);
  }
}

/** The manager's flags as the operator sets them (feature gates merged with the manifest's, sorted). */
function customizeManagerArgs(args: unknown[], manager: ProviderManagerSpec, where: string): unknown[] {
  for (const [groupKind, value] of Object.entries(manager.controller?.groupKindConcurrency ?? {}).sort(([a], [b]) =>
    compareText(a, b),
  ))
    setArg(args, `--${groupKind.toLowerCase()}-concurrency`, String(value));
  if (manager.maxConcurrentReconciles)
    setArg(args, '--max-concurrent-reconciles', String(manager.maxConcurrentReconciles));
  const strings: [string, string | undefined][] = [
    ['--namespace', manager.cacheNamespace],
    ['--health-addr', manager.health?.healthProbeBindAddress],
    ['--metrics-bind-addr', manager.metrics?.bindAddress],
    ['--diagnostics-address', manager.metrics?.diagnosticsAddress],
    ['--webhook-host', manager.webhook?.host],
    ['--webhook-cert-dir', manager.webhook?.certDir],
    ['--profiler-address', manager.profilerAddress],
  ];
  for (const [flag, value] of strings) if (value) setArg(args, flag, value);
  const leader = manager.leaderElection;
  if (leader?.leaderElect !== undefined) {
    setArg(args, '--leader-elect', String(leader.leaderElect));
    if (leader.leaderElect && leader.resourceName && leader.resourceNamespace)
      setArg(args, '--leader-election-id', `${leader.resourceNamespace}/${leader.resourceName}`);
  }
  if (manager.metrics?.insecureDiagnostics) setArg(args, '--insecure-diagnostics', 'true');
  if (manager.webhook?.port !== undefined) setArg(args, '--webhook-port', String(manager.webhook.port));
  if (manager.syncPeriod) setArg(args, '--sync-period', manager.syncPeriod);
  if (manager.verbosity !== undefined && manager.verbosity !== DEFAULT_VERBOSITY)
    setArg(args, '--v', String(manager.verbosity));
  if (manager.featureGates && Object.keys(manager.featureGates).length > 0) {
    const gates = new Map<string, boolean>();
    const existing = args.find((arg): arg is string => typeof arg === 'string' && arg.startsWith('--feature-gates='));
    for (const gate of existing?.slice('--feature-gates='.length).split(',') ?? []) {
      const [name, value] = gate.split('=');
      if (name && value !== undefined) gates.set(name, value === 'true');
    }
    for (const [name, value] of Object.entries(manager.featureGates)) gates.set(name, value);
    setArg(
      args,
      '--feature-gates',
      [...gates]
        .map(([name, value]) => `${name}=${value}`)
        .sort()
        .join(','),
    );
  }
  for (const [flag, value] of Object.entries(manager.additionalArgs ?? {}).sort(([a], [b]) => compareText(a, b))) {
    if (args.some((arg) => typeof arg === 'string' && arg.startsWith(`${flag}=`)))
      throw new ProviderRenderError(
        `spec.manager.additionalArgs: ${where} already passes ${flag}; set it through the field the operator maps it from, or drop it from additionalArgs`,
      );
    setArg(args, flag, value);
  }
  return args;
}

/** RFC 7386: objects merge, null deletes, anything else replaces. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isRecord(patch)) return structuredClone(patch);
  const result: Record<string, unknown> = isRecord(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

function readPatch(text: string, where: string): unknown {
  try {
    const documents = decodeYamlDocuments(text);
    return documents[0]?.value ?? null;
  } catch (error) {
    if (error instanceof YamlDecodeError)
      throw new ProviderRenderError(`${where}: is not valid YAML: ${error.message}`);
    throw error;
  }
}

function groupVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** spec.patches: each patch (a merge patch, or a list of JSON patch operations) on every object its target selects, in order. */
function applyPatches(objects: KubeObject[], patches: ProviderPatch[]): KubeObject[] {
  let result = objects;
  patches.forEach((patch, index) => {
    const where = `spec.patches[${index}]`;
    const body = readPatch(patch.patch ?? '', where);
    const target = patch.target;
    let selector;
    try {
      selector = target?.labelSelector ? parseLabelSelector(target.labelSelector) : undefined;
    } catch (error) {
      throw new ProviderRenderError(`${where}.target.labelSelector: ${(error as Error).message}`);
    }
    result = result.map((object) => {
      const { group, version } = groupVersion(object.apiVersion);
      if (target) {
        if (target.group !== undefined && target.group !== group) return object;
        if (target.version && target.version !== version) return object;
        if (target.kind && target.kind !== object.kind) return object;
        if (target.name && target.name !== object.metadata.name) return object;
        if (target.namespace && target.namespace !== object.metadata.namespace) return object;
        if (selector && !matchesLabelSelector(selector, object.metadata.labels ?? {})) return object;
      }
      if (Array.isArray(body)) {
        try {
          return jsonPatch.applyPatch(structuredClone(object), body as jsonPatch.Operation[], true, false).newDocument;
        } catch (error) {
          throw new ProviderRenderError(
            `${where}: cannot be applied to ${object.kind} ${object.metadata.name}: ${(error as Error).message.split('\n')[0]}`,
          );
        }
      }
      if (!isRecord(body))
        throw new ProviderRenderError(`${where}: must be a mapping (a merge patch) or a list of JSON patch operations`);
      return mergePatch(object, body) as KubeObject;
    });
  });
  return result;
}

/** spec.manifestPatches: merge patches applied to the objects of the same apiVersion and kind (both required in the patch). */
function applyManifestPatches(objects: KubeObject[], patches: string[]): KubeObject[] {
  const parsed = patches.map((text, index) => {
    const body = readPatch(text, `spec.manifestPatches[${index}]`);
    if (!isRecord(body) || typeof body.kind !== 'string')
      throw new ProviderRenderError(
        `spec.manifestPatches[${index}]: must be a merge patch with kind (and apiVersion) saying which objects it patches`,
      );
    return body;
  });
  return objects.map((object) =>
    parsed.reduce<KubeObject>((current, patch) => {
      if (patch.kind !== current.kind) return current;
      if (typeof patch.apiVersion === 'string' && patch.apiVersion !== current.apiVersion) return current;
      return mergePatch(current, patch) as KubeObject;
    }, object),
  );
}
