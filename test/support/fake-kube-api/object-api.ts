/**
 * What each API verb does to stored objects: defaulting, validation, optimistic concurrency,
 * the status subresource, generation, finalizers and garbage collection.
 */
import { randomUUID } from 'node:crypto';
import { clone, isPlainObject, jsonEqual, specPart, type KubeObject } from './kube-object.js';
import { parseFieldSelector, parseLabelSelector } from './label-selector.js';
import { applyJsonPatch, applyMergePatch, PatchError, PatchFormatError } from './patch.js';
import { validateLabels, validateName, type ResourceRegistry, type ResourceType } from './resources.js';
import {
  alreadyExists,
  ApiError,
  badRequest,
  conflict,
  failureStatus,
  fieldInvalid,
  forbidden,
  invalid,
  notFound,
  successStatus,
  type Status,
  type StatusCause,
} from './status.js';
import type { ObjectStore } from './store.js';

export type PatchType = 'json' | 'merge' | 'strategic' | 'apply';

export type PropagationPolicy = 'Background' | 'Foreground' | 'Orphan';

export interface DeleteOptions {
  propagationPolicy?: PropagationPolicy;
  preconditions?: { uid?: string; resourceVersion?: string };
}

export interface ListOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
}

export interface ListResult {
  apiVersion: string;
  kind: string;
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: KubeObject[];
}

export interface ObjectApiOptions {
  now: () => Date;
  /** Creating into a missing namespace succeeds (and creates it) instead of failing with 404. */
  autoCreateNamespaces: boolean;
}

const NAMESPACES_KEY = '/namespaces';
const GENERATE_NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** The store key of a resource: `<group>/<plural>`, the same for every version. */
export function typeKey(type: ResourceType): string {
  return `${type.group}/${type.plural}`;
}

function timestamp(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function randomSuffix(): string {
  let suffix = '';
  for (let i = 0; i < 5; i++)
    suffix += GENERATE_NAME_ALPHABET[Math.floor(Math.random() * GENERATE_NAME_ALPHABET.length)];
  return suffix;
}

/** The API verbs over an ObjectStore, with the behaviour of a real API server's generic registry. */
export class ObjectApi {
  constructor(
    private readonly store: ObjectStore,
    private readonly resources: ResourceRegistry,
    private readonly options: ObjectApiOptions,
  ) {}

  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const found = this.store.get(typeKey(type), this.scope(type, namespace), name);
    if (!found) throw notFound(type, name);
    return found;
  }

  list(type: ResourceType, namespace: string | undefined, options: ListOptions = {}): ListResult {
    const labels = parseLabelSelector(options.labelSelector);
    const fields = parseFieldSelector(options.fieldSelector);
    let items = this.store
      .list(typeKey(type), this.scope(type, namespace))
      .filter((obj) => labels(obj.metadata.labels) && fields(obj));
    const metadata: ListResult['metadata'] = { resourceVersion: String(this.store.currentRevision()) };
    if (options.continue) {
      const after = decodeContinue(options.continue);
      items = items.filter((obj) => `${obj.metadata.namespace ?? ''}/${obj.metadata.name}` > after);
    }
    if (options.limit && options.limit > 0 && items.length > options.limit) {
      const remaining = items.length - options.limit;
      items = items.slice(0, options.limit);
      const last = items[items.length - 1];
      metadata.continue = encodeContinue(`${last?.metadata.namespace ?? ''}/${last?.metadata.name}`);
      metadata.remainingItemCount = remaining;
    }
    return {
      apiVersion: type.apiVersion,
      kind: type.listKind,
      metadata,
      // Typed lists from a real server carry no apiVersion/kind on their items; custom resource lists do.
      items: items.map((obj) => (type.custom ? obj : stripTypeMeta(obj))),
    };
  }

  /** POST. `seed` is the test hook's path: keeps status, creates the namespace, replaces an existing object. */
  create(type: ResourceType, namespace: string | undefined, body: unknown, seed = false): KubeObject {
    const obj = this.decode(type, body);
    if (type.namespaced) {
      if (obj.metadata.namespace && namespace && obj.metadata.namespace !== namespace) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
      }
      obj.metadata.namespace = namespace ?? obj.metadata.namespace ?? 'default';
    } else {
      delete obj.metadata.namespace;
    }
    if (!obj.metadata.name && obj.metadata.generateName)
      obj.metadata.name = `${obj.metadata.generateName}${randomSuffix()}`;
    const name = obj.metadata.name ?? '';
    if (!name) {
      throw invalid(type, '', [
        {
          reason: 'FieldValueRequired',
          field: 'metadata.name',
          message: 'metadata.name: Required value: name or generateName is required',
        },
      ]);
    }
    const existing = this.store.get(typeKey(type), obj.metadata.namespace, name);
    if (seed && existing) return this.seedOver(type, existing, obj);
    if (obj.metadata.resourceVersion && !seed) {
      // What etcd3's storage says; controllers that copy a fetched object into a create hit this.
      throw new ApiError(
        failureStatus(
          500,
          'Internal error occurred: resourceVersion should not be set on objects to be created',
          'InternalError',
        ),
      );
    }
    if (type.namespaced) this.requireNamespace(obj.metadata.namespace ?? '', seed || this.options.autoCreateNamespaces);
    if (existing) throw alreadyExists(type, name);

    const metadata = obj.metadata;
    delete metadata.deletionTimestamp;
    delete metadata.deletionGracePeriodSeconds;
    delete metadata.resourceVersion;
    metadata.uid = randomUUID();
    metadata.creationTimestamp = timestamp(this.options.now());
    if (type.custom) metadata.generation = 1;
    else delete metadata.generation;
    // With a status subresource the server discards status on create; the controller must write it afterwards.
    if (type.statusSubresource && !seed && type.custom) delete obj['status'];
    this.prepareAndValidate(type, obj);
    return this.store.put(typeKey(type), obj);
  }

  /** PUT on the object (`subresource` undefined) or on its status subresource. */
  update(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    body: unknown,
    subresource?: 'status',
  ): KubeObject {
    const current = this.get(type, namespace, name);
    const candidate = this.decode(type, body);
    if (candidate.metadata.name !== undefined && candidate.metadata.name !== name) {
      throw badRequest(
        `the name of the object (${candidate.metadata.name}) does not match the name on the URL (${name})`,
      );
    }
    if (
      type.namespaced &&
      candidate.metadata.namespace &&
      candidate.metadata.namespace !== current.metadata.namespace
    ) {
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    if (!candidate.metadata.resourceVersion && type.custom) {
      // Custom resources forbid unconditional updates; built-ins such as ConfigMap or Lease allow them.
      throw invalid(type, name, [fieldInvalid('metadata.resourceVersion', '0x0', 'must be specified for an update')]);
    }
    return this.write(type, current, candidate, subresource);
  }

  /** PATCH: applies the patch to the stored object, then behaves like an update with the stored resourceVersion. */
  patch(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    patchType: PatchType,
    patchBody: unknown,
    subresource?: 'status',
  ): KubeObject {
    if (patchType === 'apply' || (patchType === 'strategic' && type.custom)) {
      throw new ApiError(
        failureStatus(
          415,
          patchType === 'apply'
            ? 'server-side apply is not supported by the fake API server: use application/merge-patch+json or application/json-patch+json'
            : 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml',
          'UnsupportedMediaType',
        ),
      );
    }
    const current = this.get(type, namespace, name);
    let patched: unknown;
    try {
      // Built-in kinds accept strategic merge patch; for the fields a controller patches it merges like RFC 7386.
      patched = patchType === 'json' ? applyJsonPatch(current, patchBody) : applyMergePatch(current, patchBody);
    } catch (err) {
      if (err instanceof PatchFormatError) throw badRequest(err.message);
      if (err instanceof PatchError) throw new ApiError(failureStatus(422, err.message, 'Invalid'));
      throw err;
    }
    if (!isPlainObject(patched) || !isPlainObject(patched['metadata']))
      throw badRequest('the patch produced an object without metadata');
    const candidate = patched as KubeObject;
    if (candidate.metadata.name !== name) {
      throw invalid(type, name, [fieldInvalid('metadata.name', candidate.metadata.name, 'field is immutable')]);
    }
    // A patch is unconditional unless it carries a resourceVersion, which then must match.
    candidate.metadata.resourceVersion ??= current.metadata.resourceVersion;
    return this.write(type, current, candidate, subresource);
  }

  /** DELETE: immediate unless finalizers (or a namespace's content) hold the object; then it is only marked. */
  delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    options: DeleteOptions = {},
  ): KubeObject | Status {
    const current = this.get(type, namespace, name);
    const pre = options.preconditions;
    if (pre?.uid && pre.uid !== current.metadata.uid) {
      throw conflict(
        type,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    if (pre?.resourceVersion && pre.resourceVersion !== current.metadata.resourceVersion) {
      throw conflict(
        type,
        name,
        `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${current.metadata.resourceVersion}). The object might have been modified`,
      );
    }
    const policy = options.propagationPolicy ?? 'Background';
    if (policy === 'Orphan') this.orphanDependants(current.metadata.uid ?? '');
    if (current.metadata.deletionTimestamp) return current;

    const isNamespace = !type.custom && type.plural === 'namespaces' && type.group === '';
    if ((current.metadata.finalizers?.length ?? 0) === 0 && !isNamespace) {
      this.removeNow(type, current, policy);
      return successStatus(type, name, current.metadata.uid ?? '');
    }
    const marked = clone(current);
    marked.metadata.deletionTimestamp = timestamp(this.options.now());
    marked.metadata.deletionGracePeriodSeconds = 0;
    if (marked.metadata.generation !== undefined) marked.metadata.generation += 1;
    type.prepare?.(marked);
    const stored = this.store.put(typeKey(type), marked);
    if (isNamespace) {
      for (const { typeKey: key, object } of this.store.entries()) {
        const contained = this.typeOfKey(key);
        const objectName = object.metadata.name ?? '';
        // Earlier deletions may already have collected this object as a dependant.
        if (!contained?.namespaced || object.metadata.namespace !== name || !this.store.get(key, name, objectName))
          continue;
        this.delete(contained, name, objectName, { propagationPolicy: 'Background' });
      }
      const remaining = this.store.get(NAMESPACES_KEY, undefined, name);
      return remaining ? (this.removeIfReleased(type, remaining, policy) ?? remaining) : stored;
    }
    return stored;
  }

  /** DELETE on a collection: deletes each matching object as a single DELETE would. */
  deleteCollection(type: ResourceType, namespace: string | undefined, options: ListOptions): ListResult {
    const list = this.list(type, namespace, { ...options, limit: 0 });
    for (const item of list.items) this.delete(type, item.metadata.namespace, item.metadata.name ?? '');
    return list;
  }

  private scope(type: ResourceType, namespace: string | undefined): string | undefined {
    return type.namespaced ? namespace : undefined;
  }

  private typeOfKey(key: string): ResourceType | undefined {
    return this.resources.all().find((t) => typeKey(t) === key);
  }

  /** Checks apiVersion/kind of a request body the way the server's decoder does. */
  private decode(type: ResourceType, body: unknown): KubeObject {
    if (!isPlainObject(body)) throw badRequest('the request body must be a JSON object');
    const obj = clone(body) as KubeObject;
    if (!obj.apiVersion || !obj.kind) {
      if (type.custom) throw badRequest(`Object 'Kind' is missing in '${JSON.stringify(body)}'`);
      obj.apiVersion ??= type.apiVersion;
      obj.kind ??= type.kind;
    }
    if (obj.apiVersion !== type.apiVersion) {
      throw badRequest(
        `the API version in the data (${obj.apiVersion}) does not match the expected API version (${type.apiVersion})`,
      );
    }
    if (obj.kind !== type.kind)
      throw badRequest(`the kind in the data (${obj.kind}) does not match the expected kind (${type.kind})`);
    if (!isPlainObject(obj.metadata)) obj.metadata = {};
    return obj;
  }

  private requireNamespace(namespace: string, create: boolean): void {
    const namespaces = this.resources.byPath('', 'v1', 'namespaces');
    if (!namespaces) return;
    const existing = this.store.get(NAMESPACES_KEY, undefined, namespace);
    if (!existing) {
      if (!create) throw notFound(namespaces, namespace);
      this.create(namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
      return;
    }
    if (existing.metadata.deletionTimestamp) {
      throw forbidden(`unable to create new content in namespace ${namespace} because it is being terminated`);
    }
  }

  private prepareAndValidate(type: ResourceType, obj: KubeObject): void {
    type.prepare?.(obj);
    const causes: StatusCause[] = [
      ...validateName(obj.metadata.name ?? ''),
      ...validateLabels(obj.metadata.labels),
      ...(type.validate?.(obj) ?? []),
    ];
    if (causes.length > 0) throw invalid(type, obj.metadata.name ?? '', causes);
  }

  /** The common tail of PUT and PATCH: merge server-owned fields, check the version, store, finish deletion. */
  private write(type: ResourceType, current: KubeObject, candidate: KubeObject, subresource?: 'status'): KubeObject {
    const name = current.metadata.name ?? '';
    if (candidate.metadata.uid && candidate.metadata.uid !== current.metadata.uid) {
      // A stale copy of an object that was deleted and recreated under the same name.
      throw conflict(
        type,
        name,
        `Precondition failed: UID in precondition: ${candidate.metadata.uid}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    if (candidate.metadata.resourceVersion && candidate.metadata.resourceVersion !== current.metadata.resourceVersion) {
      throw conflict(type, name);
    }
    let next: KubeObject;
    if (subresource === 'status') {
      // The status endpoint of a custom resource ignores everything but .status.
      next = clone(current);
      if (candidate['status'] === undefined) delete next['status'];
      else next['status'] = candidate['status'];
    } else {
      next = candidate;
      const kept = [
        'uid',
        'creationTimestamp',
        'deletionTimestamp',
        'deletionGracePeriodSeconds',
        'generation',
        'namespace',
      ] as const;
      const metadata: Record<string, unknown> = next.metadata;
      for (const field of kept) {
        if (current.metadata[field] === undefined) delete metadata[field];
        else metadata[field] = current.metadata[field];
      }
      if (type.statusSubresource) {
        if (current['status'] === undefined) delete next['status'];
        else next['status'] = current['status'];
      }
    }
    next.apiVersion = type.apiVersion;
    next.kind = type.kind;
    next.metadata.resourceVersion = current.metadata.resourceVersion;

    if (current.metadata.deletionTimestamp) {
      const added = (next.metadata.finalizers ?? []).filter((f) => !(current.metadata.finalizers ?? []).includes(f));
      if (added.length > 0) {
        throw invalid(type, name, [
          {
            reason: 'FieldValueForbidden',
            field: 'metadata.finalizers',
            message: 'metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted',
          },
        ]);
      }
    }
    this.prepareAndValidate(type, next);
    if (
      type.custom &&
      !jsonEqual(specPart(current, !type.statusSubresource), specPart(next, !type.statusSubresource))
    ) {
      next.metadata.generation = (current.metadata.generation ?? 0) + 1;
    }
    // A write that changes nothing keeps the resourceVersion and wakes no watcher, as on a real server.
    if (jsonEqual(next, current)) return current;
    if (current.metadata.deletionTimestamp) {
      const removed = this.removeIfReleased(type, next, 'Background');
      if (removed) return removed;
    }
    return this.store.put(typeKey(type), next);
  }

  /** Removes a terminating object once nothing holds it: no finalizers, and for a namespace, no content. */
  private removeIfReleased(type: ResourceType, obj: KubeObject, policy: PropagationPolicy): KubeObject | undefined {
    if ((obj.metadata.finalizers?.length ?? 0) > 0) return undefined;
    if (
      typeKey(type) === NAMESPACES_KEY &&
      this.store
        .entries()
        .some((e) => e.object.metadata.namespace === obj.metadata.name && this.typeOfKey(e.typeKey)?.namespaced)
    ) {
      return undefined;
    }
    return this.removeNow(type, obj, policy);
  }

  private removeNow(type: ResourceType, obj: KubeObject, policy: PropagationPolicy): KubeObject | undefined {
    const removed = this.store.remove(typeKey(type), obj.metadata.namespace, obj.metadata.name ?? '', obj);
    if (!removed) return undefined;
    // The real garbage collector is asynchronous; doing it synchronously keeps tests deterministic.
    if (policy !== 'Orphan') this.collectDependants(removed.metadata.uid ?? '');
    const namespace = removed.metadata.namespace;
    if (namespace) {
      const ns = this.store.get(NAMESPACES_KEY, undefined, namespace);
      const nsType = this.typeOfKey(NAMESPACES_KEY);
      if (ns?.metadata.deletionTimestamp && nsType) this.removeIfReleased(nsType, ns, 'Background');
    }
    return removed;
  }

  private ownerExists(uid: string): boolean {
    return this.store.entries().some((e) => e.object.metadata.uid === uid);
  }

  /** Deletes dependants whose only live owner is gone; drops the dangling reference from the others. */
  private collectDependants(ownerUid: string): void {
    for (const { typeKey: key, object } of this.store.entries()) {
      const refs = object.metadata.ownerReferences ?? [];
      if (!refs.some((r) => r.uid === ownerUid)) continue;
      const type = this.typeOfKey(key);
      if (!type) continue;
      const fresh = this.store.get(key, object.metadata.namespace, object.metadata.name ?? '');
      if (!fresh) continue;
      const remaining = (fresh.metadata.ownerReferences ?? []).filter((r) => r.uid !== ownerUid);
      if (remaining.some((r) => this.ownerExists(r.uid))) {
        fresh.metadata.ownerReferences = remaining;
        this.store.put(key, fresh);
      } else {
        this.delete(type, fresh.metadata.namespace, fresh.metadata.name ?? '', { propagationPolicy: 'Background' });
      }
    }
  }

  private orphanDependants(ownerUid: string): void {
    for (const { typeKey: key, object } of this.store.entries()) {
      const refs = object.metadata.ownerReferences ?? [];
      if (!refs.some((r) => r.uid === ownerUid)) continue;
      const remaining = refs.filter((r) => r.uid !== ownerUid);
      if (remaining.length > 0) object.metadata.ownerReferences = remaining;
      else delete object.metadata.ownerReferences;
      this.store.put(key, object);
    }
  }

  /** Replaces an existing object from a test seed, keeping its identity. */
  private seedOver(type: ResourceType, existing: KubeObject, obj: KubeObject): KubeObject {
    obj.metadata.uid = existing.metadata.uid;
    obj.metadata.creationTimestamp = existing.metadata.creationTimestamp;
    obj.metadata.resourceVersion = existing.metadata.resourceVersion;
    if (type.custom)
      obj.metadata.generation = jsonEqual(specPart(existing, false), specPart(obj, false))
        ? existing.metadata.generation
        : (existing.metadata.generation ?? 0) + 1;
    this.prepareAndValidate(type, obj);
    if (jsonEqual(obj, existing)) return existing;
    return this.store.put(typeKey(type), obj);
  }
}

function stripTypeMeta(obj: KubeObject): KubeObject {
  const { apiVersion: _apiVersion, kind: _kind, ...rest } = obj;
  return rest as KubeObject;
}

function encodeContinue(lastKey: string): string {
  return Buffer.from(JSON.stringify({ start: lastKey }), 'utf8').toString('base64url');
}

function decodeContinue(token: string): string {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { start?: unknown };
    if (typeof parsed.start === 'string') return parsed.start;
  } catch {
    // fall through to the real server's error
  }
  throw badRequest('continue key is not valid: invalid continue token');
}
