import { describe, expect, it } from 'vitest';
import { decideLifecycleHook, type HookDecisionInput } from '../../src/controller/desired-state/lifecycle-hook-decision.js';
import type { UnitSync } from '../../src/controller/desired-state/sync-state.js';

const TARGET = 'docker-ferrol-1-30-v3';
const CNI = 'clusters/team/alpha/cni';
const METRICS = 'clusters/team/alpha/metrics-server';
const MINUTE = 60_000;

function synced(dir: string): UnitSync {
  return { engine: 'flux', source: `Flux Kustomization flux-system/${dir.split('/').pop()}`, state: 'synced', revision: 'main@sha1:abc', message: 'applied' };
}

function anInput(overrides: Partial<HookDecisionInput> = {}): HookDecisionInput {
  return {
    hook: 'BeforeClusterUpgrade',
    cluster: { namespace: 'team', name: 'alpha' },
    targetRelease: TARGET,
    engine: 'flux',
    rendered: { release: TARGET, stages: [{ dir: CNI, stage: 'cni', release: TARGET }, { dir: METRICS, stage: 'metrics-server', release: TARGET }], unpublished: [] },
    sync: new Map([[CNI, synced(CNI)], [METRICS, synced(METRICS)]]),
    conditions: [],
    since: 0,
    now: MINUTE,
    timeoutMs: 30 * MINUTE,
    retryAfterSeconds: 10,
    ...overrides,
  };
}

describe('decideLifecycleHook', () => {
  it('lets the upgrade go once every stage of the target release is applied and healthy', () => {
    expect(decideLifecycleHook(anInput())).toEqual({
      status: 'Success',
      retryAfterSeconds: 0,
      outcome: 'ready',
      waitingFor: [],
      message: 'addons of release docker-ferrol-1-30-v3 for Cluster team/alpha are applied and healthy at main@sha1:abc: stages cni, metrics-server',
    });
  });

  it('holds the upgrade while the controller has not rendered the target release for the Cluster yet', () => {
    const decision = decideLifecycleHook(anInput({ rendered: { release: 'docker-ferrol-1-30-v1', stages: [{ dir: 'clusters/team/alpha/cluster-addon', stage: 'cluster-addon', release: 'docker-ferrol-1-30-v1' }], unpublished: [] } }));
    expect(decision).toMatchObject({ status: 'Success', retryAfterSeconds: 10, outcome: 'waiting' });
    expect(decision.message).toBe('waiting 60s of 30m for the controller to render and publish the addons of release docker-ferrol-1-30-v3 for Cluster team/alpha (it last rendered release docker-ferrol-1-30-v1)');
  });

  it('names each stage still awaited: unpublished, not covered by the engine, or not ready at the revision', () => {
    const progressing: UnitSync = { engine: 'flux', source: 'Flux Kustomization flux-system/alpha', state: 'progressing', revision: 'main@sha1:old', message: 'Flux Kustomization flux-system/alpha applied main@sha1:old; waiting for it to apply commit new' };
    const decision = decideLifecycleHook(anInput({ sync: new Map([[CNI, progressing]]) }));
    expect(decision.waitingFor).toEqual([
      'stage cni: Flux Kustomization flux-system/alpha applied main@sha1:old; waiting for it to apply commit new',
      'stage metrics-server: a Flux Kustomization applying clusters/team/alpha/metrics-server (none covers it)',
    ]);
    const unpublished = decideLifecycleHook(anInput({ rendered: { ...anInput().rendered!, unpublished: [CNI] } }));
    expect(unpublished.waitingFor).toEqual(['stage cni: its manifests (clusters/team/alpha/cni) to be published']);
  });

  it('waits for the CEL conditions of the hook stages, naming the condition', () => {
    const decision = decideLifecycleHook(anInput({ conditions: [{ stage: 'cni', kind: 'postcondition', verdict: { holds: false, message: 'condition `x` is false' } }, { stage: 'cni', kind: 'precondition', verdict: { holds: true, message: 'ok' } }] }));
    expect(decision).toMatchObject({ status: 'Success', outcome: 'waiting', retryAfterSeconds: 10, waitingFor: ['stage cni postcondition: condition `x` is false'] });
  });

  it('ends a wait that lasts past the timeout with a Failure naming what never became ready', () => {
    const decision = decideLifecycleHook(anInput({ conditions: [{ stage: 'cni', kind: 'postcondition', verdict: { holds: false, message: 'condition `x` is false' } }], now: 31 * MINUTE }));
    expect(decision).toEqual({
      status: 'Failure',
      retryAfterSeconds: 0,
      outcome: 'timed-out',
      waitingFor: ['stage cni postcondition: condition `x` is false'],
      message: 'gave up after 31m (the hook timeout is 30m) waiting for stage cni postcondition: condition `x` is false. Fix the addons or their conditions, or raise --hook-timeout',
    });
  });

  it('holds a non-blocking hook with a Failure (Cluster API calls it again) and answers Success once ready', () => {
    const waiting = decideLifecycleHook(anInput({ hook: 'AfterControlPlaneInitialized', sync: new Map() }));
    expect(waiting).toMatchObject({ status: 'Failure', retryAfterSeconds: 0, outcome: 'waiting' });
    expect(decideLifecycleHook(anInput({ hook: 'AfterControlPlaneInitialized' }))).toMatchObject({ status: 'Success', outcome: 'ready' });
  });

  it('does not hold Clusters whose class is no cluster stack class', () => {
    const { targetRelease: _target, ...input } = anInput();
    expect(decideLifecycleHook(input)).toMatchObject({ status: 'Success', outcome: 'not-ours', retryAfterSeconds: 0 });
  });

  it('holds while the addons are withheld, with the reason', () => {
    const decision = decideLifecycleHook(anInput({ rendered: { ...anInput().rendered!, withheld: 'spec.controlPlaneEndpoint.host is not set yet' } }));
    expect(decision.waitingFor).toEqual(['the addons of release docker-ferrol-1-30-v3 for Cluster team/alpha, which are withheld: spec.controlPlaneEndpoint.host is not set yet']);
  });

  it('with no GitOps engine watched, lets the upgrade go once the addons are published, and says application is not checked', () => {
    const decision = decideLifecycleHook(anInput({ engine: 'none', sync: new Map() }));
    expect(decision).toMatchObject({ status: 'Success', outcome: 'ready' });
    expect(decision.message).toContain('application is not checked');
  });
});
