/** The loose object shape the fake stores: any Kubernetes object, as JSON. */

interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  [key: string]: unknown;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** A deep copy, so nothing outside the store can change a stored object. */
export function clone<T>(value: T): T {
  return structuredClone(value);
}

/** Structural equality of JSON values, key order ignored. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const aKeys = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bKeys = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return aKeys.length === bKeys.length && aKeys.every((k) => jsonEqual(ao[k], bo[k]));
}

/** The part of an object whose change bumps metadata.generation: all but metadata, and status too unless it has its own endpoint. */
export function specPart(obj: KubeObject, includeStatus: boolean): Record<string, unknown> {
  const { metadata: _metadata, status, apiVersion: _apiVersion, kind: _kind, ...rest } = obj;
  return includeStatus ? { ...rest, status } : rest;
}

/** True for a JSON object (not an array, not null). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
