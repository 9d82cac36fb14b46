// The fingerprint of a run: one digest of everything that decides what a render publishes, known
// before anything is rendered — the plan (input objects, the releases each stack keeps and the
// digests of their content, layer charts, providers), the pipeline options (secrets, recipients,
// wiring, README template, scheduler configuration, ...), this tool's own code and the helm it
// would run, and the target. With the target's proof that it still holds what a settled run left
// there (settled-run.ts), an equal fingerprint means a render now would change nothing. Pure.
import type { Plan } from '../plan/build-plan.js';
import { sha256Digest, sha256Hex } from '../release/content-digest.js';
import { compareText } from '../core/compare-text.js';
import { Failure } from '../core/failure.js';

/** Bump when what goes into the fingerprint changes meaning: every recorded fingerprint then differs. */
const FINGERPRINT_FORMAT = 1;

/** What a run is made of, as the driver knows it before rendering. */
export interface FingerprintMaterial {
  /** Our own code: the package version and a digest of the files it runs from (tool-identity.ts). */
  tool: unknown;
  /** The helm a render would run: where it is and which file it is. */
  helm: unknown;
  /** The plan (src/plan/build-plan.ts), taken whole. */
  plan: unknown;
  /** The options the pipeline is given (functions such as progress callbacks left out). */
  options: unknown;
  /** The target, as its publisher prints it. */
  target: string;
}

/**
 * The plan as fingerprint material: all of it, but the providers' fetcher, a capability rather
 * than data. What it fetched is in the plan (each release with its digest); the version a published
 * tree locks, which the render fetches again, is the one the settled run rendered from that tree.
 */
export function planMaterial(plan: Plan): unknown {
  if (!plan.providers) return plan;
  const { fetcher: _fetcher, ...providers } = plan.providers;
  return { ...plan, providers: { ...providers, fetcher: 'the provider fetcher of the release source options' } };
}

/** Something in the material that cannot be digested faithfully: then there is no fingerprint. */
class Unfingerprintable extends Failure {
  constructor(message: string) {
    super('internal', message);
  }
}

/**
 * The digest of `material`, or undefined when it holds something that cannot be digested
 * faithfully (a function, a cycle, an object of an unknown class): such a run never takes the
 * shortcut, it renders.
 */
export function runFingerprint(material: FingerprintMaterial): string | undefined {
  try {
    return sha256Digest(JSON.stringify(describe({ format: FINGERPRINT_FORMAT, ...material }, new Set())));
  } catch (error) {
    if (error instanceof Unfingerprintable) return undefined;
    throw error;
  }
}

/**
 * A plain-JSON description of `value` that differs whenever `value` does: sorted keys, Maps and
 * Sets tagged (a Map's entries sorted by key), bytes by their digest. A release source (a class
 * instance with a `location`) is described by its class and location: what it serves is in the
 * plan already, as the loaded releases' content digests.
 */
function describe(value: unknown, path: Set<object>): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : { $number: String(value) };
  if (typeof value === 'bigint') return { $bigint: value.toString() };
  if (typeof value === 'undefined') return { $undefined: true };
  if (typeof value !== 'object') throw new Unfingerprintable(`a ${typeof value}`);
  if (path.has(value)) throw new Unfingerprintable('a cycle');
  path.add(value);
  try {
    if (Array.isArray(value)) return value.map((element) => describe(element, path));
    if (value instanceof Map)
      return {
        $map: [...value.entries()]
          .map(([key, element]) => [describe(key, path), describe(element, path)])
          .sort(([a], [b]) => compareText(JSON.stringify(a), JSON.stringify(b))),
      };
    if (value instanceof Set) return { $set: [...value].map((element) => describe(element, path)) };
    if (value instanceof Date) return { $date: Number.isNaN(value.getTime()) ? 'invalid' : value.toISOString() };
    if (value instanceof Uint8Array) return { $bytes: sha256Hex(value) };
    if (value instanceof RegExp) return { $regexp: String(value) };
    const prototype = Object.getPrototypeOf(value) as object | null;
    if (prototype === Object.prototype || prototype === null) {
      const described: Record<string, unknown> = {};
      for (const key of Object.keys(value).sort(compareText)) {
        const element = (value as Record<string, unknown>)[key];
        if (typeof element === 'function') throw new Unfingerprintable(`a function at ${key}`);
        described[key] = describe(element, path);
      }
      return described;
    }
    const location = (value as { location?: unknown }).location;
    if (typeof location === 'string')
      return { $source: (prototype as { constructor?: { name?: string } }).constructor?.name ?? 'unknown', location };
    throw new Unfingerprintable(
      `an instance of ${(prototype as { constructor?: { name?: string } }).constructor?.name ?? 'an unknown class'}`,
    );
  } finally {
    path.delete(value);
  }
}
