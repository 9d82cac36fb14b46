// The few Kubernetes API calls the reconcilers make, over client-node: read one object, create,
// merge-patch (object or status subresource), delete, the Argo CD cluster Secrets, and Events.
// Reconcilers receive the narrow slice they call (`StatusWriter`, `ObjectWriter`, ...), never the client.
import { createHash } from 'node:crypto';
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type V1ConfigMap,
  type V1Secret,
} from '@kubernetes/client-node';
import type { KubeObject } from '../../api/types.js';
import { FIELD_MANAGER, identifyClient } from './client-identity.js';
import { describeKubeError, httpStatusOf } from './informer-set.js';
import type { EventIntent } from './runtime-contract.js';
import { Failure } from '../../core/failure.js';

/** A kind as the REST API addresses it. */
export interface ResourceKind {
  group: string;
  version: string;
  plural: string;
  /** False for cluster-scoped kinds (their namespace argument is ignored); default namespaced. */
  namespaced?: boolean;
}

/** A failed API call: the HTTP status and the Status message, never headers or bodies with credentials. */
export class KubeRequestError extends Failure {
  constructor(
    readonly status: number | undefined,
    readonly operation: string,
    message: string,
  ) {
    super('internal', `${operation}: ${status ? `HTTP ${status}: ` : ''}${message}`);
    this.name = 'KubeRequestError';
  }

  /**
   * 409, or a JSON patch whose `test` of the resourceVersion failed: the API server answers that
   * with 422 ("testing value /metadata/resourceVersion failed: test failed"), but it means the same
   * as a 409: the copy we patched from is stale; read again and retry.
   */
  get conflict(): boolean {
    return (
      this.status === 409 ||
      (this.status === 422 && /testing value \/metadata\/resourceVersion failed/.test(this.message))
    );
  }

  get notFound(): boolean {
    return this.status === 404;
  }
}

function wrap(error: unknown, operation: string): KubeRequestError {
  if (error instanceof KubeRequestError) return error;
  const summary = describeKubeError(error);
  return new KubeRequestError(httpStatusOf(error), operation, String(summary['message'] ?? 'request failed'));
}

/** The Secret fields the controller reads. */
interface SecretData {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; resourceVersion?: string };
  data?: Record<string, string>;
}

interface ObjectReader {
  get(kind: ResourceKind, namespace: string, name: string): Promise<KubeObject | undefined>;
}

export interface StatusWriter extends ObjectReader {
  /** Merge-patches the status subresource; a `metadata.resourceVersion` in the patch makes it conditional (409). */
  patchStatus(kind: ResourceKind, namespace: string, name: string, patch: Record<string, unknown>): Promise<KubeObject>;
}

export interface ObjectWriter extends StatusWriter {
  create(kind: ResourceKind, namespace: string, object: KubeObject): Promise<KubeObject>;
  /** Merge-patches the object (metadata, spec). */
  patch(kind: ResourceKind, namespace: string, name: string, patch: Record<string, unknown>): Promise<KubeObject>;
  /** Replaces `.spec` as a whole (a JSON patch), so fields the template dropped disappear. */
  replaceSpec(
    kind: ResourceKind,
    namespace: string,
    name: string,
    spec: unknown,
    resourceVersion?: string,
  ): Promise<KubeObject>;
  /** Deletes; a missing object is fine. `uid` guards against deleting a recreated namesake. */
  remove(kind: ResourceKind, namespace: string, name: string, uid?: string): Promise<void>;
}

export interface SecretStore {
  readSecret(namespace: string, name: string): Promise<SecretData | undefined>;
  listSecrets(namespace: string, labelSelector: string): Promise<SecretData[]>;
  /** Creates or replaces (when `resourceVersion` is given) a Secret from `stringData`. */
  writeSecret(
    secret: {
      metadata: { name: string; namespace: string; labels: Record<string, string> };
      stringData: Record<string, string>;
    },
    resourceVersion?: string,
  ): Promise<void>;
  deleteSecret(namespace: string, name: string): Promise<void>;
}

/** ConfigMaps read by name, or listed by label in one namespace (Cluster API provider configuration). */
export interface ConfigMapReader {
  readConfigMap(namespace: string, name: string): Promise<KubeObject | undefined>;
  listConfigMaps(namespace: string, labelSelector: string): Promise<KubeObject[]>;
}

export interface EventSink {
  recordEvent(intent: EventIntent): Promise<void>;
}

export type KubeClient = ObjectWriter & SecretStore & ConfigMapReader & EventSink;

export interface KubeClientOptions {
  kubeConfig: KubeConfig;
  /** `reportingInstance` of Events: the pod name. */
  identity: string;
  now?: () => Date;
}

const MERGE_PATCH = () => setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const JSON_PATCH = () => setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
const EVENT_COMPONENT = 'clusterstack-gitops-controller';
const MAX_EVENT_MESSAGE = 1024;

/** Events are named by what they say, so the same event twice bumps a count instead of adding one. */
function eventName(intent: EventIntent): string {
  const digest = createHash('sha256')
    .update(
      `${intent.regarding.kind}\n${intent.regarding.uid ?? intent.regarding.name}\n${intent.reason}\n${intent.message}`,
    )
    .digest('hex');
  const base = intent.regarding.name.slice(0, 200);
  return `${base}.${digest.slice(0, 16)}`;
}

/** The controller's client-node based KubeClient: our User-Agent on every request, our field manager on every write. */
export function createKubeClient(options: KubeClientOptions): KubeClient {
  identifyClient(options.kubeConfig);
  const custom = options.kubeConfig.makeApiClient(CustomObjectsApi);
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  return {
    ...statusWriter(custom),
    ...objectWriter(custom),
    ...secretStore(core),
    ...configMapReader(core),
    ...eventSink(core, options.identity, options.now ?? (() => new Date())),
  };
}

/** How an operation names the object in its error: `plural.group namespace/name`. */
function describe(kind: ResourceKind, namespace: string, name?: string): string {
  return `${kind.plural}.${kind.group || 'core'} ${namespace}/${name ?? ''}`;
}

/** Custom objects read, and their status subresource merge-patched, namespaced or cluster-scoped. */
function statusWriter(custom: CustomObjectsApi): StatusWriter {
  return {
    async get(kind, namespace, name) {
      try {
        if (kind.namespaced === false)
          return (await custom.getClusterCustomObject({
            group: kind.group,
            version: kind.version,
            plural: kind.plural,
            name,
          })) as KubeObject;
        return (await custom.getNamespacedCustomObject({ ...kind, namespace, name })) as KubeObject;
      } catch (error) {
        if (httpStatusOf(error) === 404) return undefined;
        throw wrap(error, `get ${describe(kind, namespace, name)}`);
      }
    },
    async patchStatus(kind, namespace, name, patch) {
      try {
        if (kind.namespaced === false)
          return (await custom.patchClusterCustomObjectStatus(
            {
              group: kind.group,
              version: kind.version,
              plural: kind.plural,
              name,
              body: patch,
              fieldManager: FIELD_MANAGER,
            },
            MERGE_PATCH(),
          )) as KubeObject;
        return (await custom.patchNamespacedCustomObjectStatus(
          { ...kind, namespace, name, body: patch, fieldManager: FIELD_MANAGER },
          MERGE_PATCH(),
        )) as KubeObject;
      } catch (error) {
        throw wrap(error, `patch status of ${describe(kind, namespace, name)}`);
      }
    },
  };
}

/** Custom objects created, patched (merge or spec replace) and deleted, in a namespace. */
function objectWriter(custom: CustomObjectsApi): Omit<ObjectWriter, keyof StatusWriter> {
  return {
    async create(kind, namespace, object) {
      try {
        return (await custom.createNamespacedCustomObject({
          ...kind,
          namespace,
          body: object,
          fieldManager: FIELD_MANAGER,
        })) as KubeObject;
      } catch (error) {
        throw wrap(error, `create ${describe(kind, namespace, object.metadata.name)}`);
      }
    },
    async patch(kind, namespace, name, patch) {
      try {
        return (await custom.patchNamespacedCustomObject(
          { ...kind, namespace, name, body: patch, fieldManager: FIELD_MANAGER },
          MERGE_PATCH(),
        )) as KubeObject;
      } catch (error) {
        throw wrap(error, `patch ${describe(kind, namespace, name)}`);
      }
    },
    async replaceSpec(kind, namespace, name, spec, resourceVersion) {
      const ops: unknown[] = [];
      if (resourceVersion) ops.push({ op: 'test', path: '/metadata/resourceVersion', value: resourceVersion });
      ops.push({ op: 'add', path: '/spec', value: spec });
      try {
        return (await custom.patchNamespacedCustomObject(
          { ...kind, namespace, name, body: ops, fieldManager: FIELD_MANAGER },
          JSON_PATCH(),
        )) as KubeObject;
      } catch (error) {
        throw wrap(error, `patch spec of ${describe(kind, namespace, name)}`);
      }
    },
    async remove(kind, namespace, name, uid) {
      try {
        await custom.deleteNamespacedCustomObject({
          ...kind,
          namespace,
          name,
          ...(uid ? { body: { preconditions: { uid } } } : {}),
        });
      } catch (error) {
        if (httpStatusOf(error) === 404) return;
        throw wrap(error, `delete ${describe(kind, namespace, name)}`);
      }
    },
  };
}

/** Secrets read, listed by label, created or replaced, and deleted. */
function secretStore(core: CoreV1Api): SecretStore {
  return {
    async readSecret(namespace, name) {
      try {
        return toSecretData(await core.readNamespacedSecret({ namespace, name }));
      } catch (error) {
        if (httpStatusOf(error) === 404) return undefined;
        throw wrap(error, `get secret ${namespace}/${name}`);
      }
    },
    async listSecrets(namespace, labelSelector) {
      try {
        return (await core.listNamespacedSecret({ namespace, labelSelector })).items.map(toSecretData);
      } catch (error) {
        throw wrap(error, `list secrets in ${namespace}`);
      }
    },
    async writeSecret(secret, resourceVersion) {
      const body: V1Secret = {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'Opaque',
        metadata: { ...secret.metadata, ...(resourceVersion ? { resourceVersion } : {}) },
        stringData: secret.stringData,
      };
      try {
        if (resourceVersion)
          await core.replaceNamespacedSecret({
            namespace: secret.metadata.namespace,
            name: secret.metadata.name,
            body,
            fieldManager: FIELD_MANAGER,
          });
        else
          await core.createNamespacedSecret({
            namespace: secret.metadata.namespace,
            body,
            fieldManager: FIELD_MANAGER,
          });
      } catch (error) {
        throw wrap(
          error,
          `${resourceVersion ? 'replace' : 'create'} secret ${secret.metadata.namespace}/${secret.metadata.name}`,
        );
      }
    },
    async deleteSecret(namespace, name) {
      try {
        await core.deleteNamespacedSecret({ namespace, name });
      } catch (error) {
        if (httpStatusOf(error) === 404) return;
        throw wrap(error, `delete secret ${namespace}/${name}`);
      }
    },
  };
}

/** ConfigMaps read by name or listed by label. */
function configMapReader(core: CoreV1Api): ConfigMapReader {
  return {
    async readConfigMap(namespace, name) {
      try {
        return toConfigMapObject(await core.readNamespacedConfigMap({ namespace, name }));
      } catch (error) {
        if (httpStatusOf(error) === 404) return undefined;
        throw wrap(error, `get configmap ${namespace}/${name}`);
      }
    },
    async listConfigMaps(namespace, labelSelector) {
      try {
        return (await core.listNamespacedConfigMap({ namespace, labelSelector })).items.map(toConfigMapObject);
      } catch (error) {
        throw wrap(error, `list configmaps in ${namespace}`);
      }
    },
  };
}

/** Events recorded under a name of what they say: the same event again counts up on the existing one. */
function eventSink(core: CoreV1Api, identity: string, now: () => Date): EventSink {
  return {
    async recordEvent(intent) {
      const namespace = intent.regarding.namespace;
      const name = eventName(intent);
      const stamp = now();
      const involvedObject = {
        apiVersion: intent.regarding.apiVersion,
        kind: intent.regarding.kind,
        name: intent.regarding.name,
        namespace,
        ...(intent.regarding.uid ? { uid: intent.regarding.uid } : {}),
      };
      try {
        await core.createNamespacedEvent({
          namespace,
          fieldManager: FIELD_MANAGER,
          body: {
            metadata: { name, namespace },
            involvedObject,
            reason: intent.reason,
            message: intent.message.slice(0, MAX_EVENT_MESSAGE),
            type: intent.type,
            count: 1,
            firstTimestamp: stamp,
            lastTimestamp: stamp,
            source: { component: EVENT_COMPONENT },
            reportingComponent: EVENT_COMPONENT,
            reportingInstance: identity,
          },
        });
      } catch (error) {
        if (httpStatusOf(error) !== 409) throw wrap(error, `create event ${namespace}/${name}`);
        // The same event again: count it on the existing one.
        try {
          const existing = await core.readNamespacedEvent({ namespace, name });
          await core.patchNamespacedEvent(
            {
              namespace,
              name,
              body: { count: (existing.count ?? 1) + 1, lastTimestamp: stamp.toISOString() },
              fieldManager: FIELD_MANAGER,
            },
            MERGE_PATCH(),
          );
        } catch (patchError) {
          throw wrap(patchError, `update event ${namespace}/${name}`);
        }
      }
    },
  };
}

function toSecretData(secret: V1Secret): SecretData {
  const metadata: SecretData['metadata'] = { name: secret.metadata?.name ?? '' };
  if (secret.metadata?.namespace) metadata.namespace = secret.metadata.namespace;
  if (secret.metadata?.labels) metadata.labels = secret.metadata.labels;
  if (secret.metadata?.resourceVersion) metadata.resourceVersion = secret.metadata.resourceVersion;
  return secret.data ? { metadata, data: secret.data } : { metadata };
}

/** A ConfigMap as the inputs hold one: name, namespace, labels, annotations, data and binaryData. */
function toConfigMapObject(configMap: V1ConfigMap): KubeObject {
  const metadata: KubeObject['metadata'] = { name: configMap.metadata?.name ?? '' };
  if (configMap.metadata?.namespace) metadata.namespace = configMap.metadata.namespace;
  if (configMap.metadata?.labels) metadata.labels = configMap.metadata.labels;
  if (configMap.metadata?.annotations) metadata.annotations = configMap.metadata.annotations;
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata,
    ...(configMap.data ? { data: configMap.data } : {}),
    ...(configMap.binaryData ? { binaryData: configMap.binaryData } : {}),
  } as KubeObject;
}
