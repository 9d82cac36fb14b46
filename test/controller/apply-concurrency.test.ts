// applyDesiredState writes several objects of a kind at once (the first reconcile of a large fleet
// was hundreds of sequential requests that held later changes back), while each object's own writes
// stay in order: created first, then its status.
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/api/types.js';
import { APPLY_CONCURRENCY, applyDesiredState } from '../../src/controller/reconcile/apply-desired-state.js';
import type { DesiredState } from '../../src/controller/desired-state/desired-state.js';
import type { ObjectWriter, ResourceKind } from '../../src/controller/runtime/kube-client.js';

/** An API that answers after a turn of the event loop and records what it was asked, and how many requests were in flight. */
function recordingWriter(): { writer: ObjectWriter; log: string[]; maxInFlight: () => number } {
  const log: string[] = [];
  let inFlight = 0;
  let max = 0;
  let version = 0;
  const answer = async <T>(entry: string, result: () => T): Promise<T> => {
    inFlight += 1;
    max = Math.max(max, inFlight);
    await new Promise((resolve) => setImmediate(resolve));
    inFlight -= 1;
    log.push(entry);
    return result();
  };
  const stored = new Map<string, KubeObject>();
  const writer: ObjectWriter = {
    get: async (_kind: ResourceKind, namespace: string, name: string) =>
      answer(`get ${namespace}/${name}`, () => stored.get(`${namespace}/${name}`)),
    create: async (_kind, namespace, object) =>
      answer(`create ${namespace}/${object.metadata.name}`, () => {
        const created = {
          ...object,
          metadata: { ...object.metadata, uid: `uid-${object.metadata.name}`, resourceVersion: String(++version) },
        };
        stored.set(`${namespace}/${object.metadata.name}`, created);
        return created;
      }),
    patchStatus: async (_kind, namespace, name, patch) =>
      answer(`status ${namespace}/${name}`, () => {
        const updated = {
          ...stored.get(`${namespace}/${name}`)!,
          status: patch['status'],
          metadata: { ...stored.get(`${namespace}/${name}`)!.metadata, resourceVersion: String(++version) },
        } as KubeObject;
        stored.set(`${namespace}/${name}`, updated);
        return updated;
      }),
    patch: async () => {
      throw new Error('not expected');
    },
    replaceSpec: async () => {
      throw new Error('not expected');
    },
    remove: async () => {
      throw new Error('not expected');
    },
  } as ObjectWriter;
  return { writer, log, maxInFlight: () => max };
}

function addon(index: number): DesiredState['addons'][number] {
  const name = `cluster-${index}`;
  return {
    object: {
      apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
      kind: 'ClusterAddon',
      metadata: { name, namespace: 'fleet' },
      spec: { clusterRef: { name } },
    } as unknown as DesiredState['addons'][number]['object'],
    status: { ready: true } as unknown as DesiredState['addons'][number]['status'],
  };
}

describe('applyDesiredState', () => {
  it('writes many objects of a kind at once, at most APPLY_CONCURRENCY, each created before its status is written', async () => {
    const { writer, log, maxInFlight } = recordingWriter();
    const state: DesiredState = {
      stacks: [],
      releases: [],
      releasesToDelete: [],
      addons: Array.from({ length: 60 }, (_, i) => addon(i)),
      addonsToDelete: [],
      providerReleases: [],
      providerReleasesToDelete: [],
      capiProviders: [],
      events: [],
    };
    const logged: unknown[] = [];
    const report = await applyDesiredState(writer, state, {
      now: '2026-11-23T00:00:00Z',
      logger: {
        info: () => undefined,
        warn: (fields: unknown) => logged.push(fields),
        debug: () => undefined,
        error: () => undefined,
      } as never,
      kindOf: () => undefined,
    });

    expect(logged).toEqual([]);
    expect(report.errors).toEqual([]);
    expect(report.created).toHaveLength(60);
    expect(report.created).toEqual([...report.created].sort());
    expect(report.statusesWritten).toBe(60);
    expect(maxInFlight()).toBeGreaterThan(1);
    expect(maxInFlight()).toBeLessThanOrEqual(APPLY_CONCURRENCY);
    for (let index = 0; index < 60; index += 1) {
      expect(log.indexOf(`create fleet/cluster-${index}`)).toBeLessThan(log.indexOf(`status fleet/cluster-${index}`));
    }
  });
});
