import { describe, expect, it } from 'vitest';
import {
  decideLifecycleHook,
  type HookDecisionInput,
} from '../../src/controller/desired-state/lifecycle-hook-decision.js';
import type { UnitSync } from '../../src/controller/desired-state/sync-state.js';

const TARGET = 'docker-ferrol-1-30-v3';
const CNI = 'clusters/team/alpha/cni';
const METRICS = 'clusters/team/alpha/metrics-server';
const MINUTE = 60_000;

function synced(dir: string): UnitSync {
  return {
    engine: 'flux',
    source: `Flux Kustomization flux-system/${dir.split('/').pop()}`,
    state: 'synced',
    revision: 'main@sha1:abc',
    message: 'applied',
  };
}

function anInput(overrides: Partial<HookDecisionInput> = {}): HookDecisionInput {
  return {
    hook: 'BeforeClusterUpgrade',
    cluster: { namespace: 'team', name: 'alpha' },
    targetRelease: TARGET,
    engine: 'flux',
    rendered: {
      release: TARGET,
      stages: [
        { dir: CNI, stage: 'cni', release: TARGET },
        { dir: METRICS, stage: 'metrics-server', release: TARGET },
      ],
      unpublished: [],
    },
    sync: new Map([
      [CNI, synced(CNI)],
      [METRICS, synced(METRICS)],
    ]),
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
      message:
        'addons of release docker-ferrol-1-30-v3 for Cluster team/alpha are applied and healthy at main@sha1:abc: stages cni, metrics-server',
    });
  });

  it('holds the upgrade while the controller has not rendered the target release for the Cluster yet', () => {
    const decision = decideLifecycleHook(
      anInput({
        rendered: {
          release: 'docker-ferrol-1-30-v1',
          stages: [
            { dir: 'clusters/team/alpha/cluster-addon', stage: 'cluster-addon', release: 'docker-ferrol-1-30-v1' },
          ],
          unpublished: [],
        },
      }),
    );
    expect(decision).toMatchObject({ status: 'Success', retryAfterSeconds: 10, outcome: 'waiting' });
    expect(decision.message).toBe(
      'waiting 60s of 30m for the controller to render and publish the addons of release docker-ferrol-1-30-v3 for Cluster team/alpha (it last rendered release docker-ferrol-1-30-v1)',
    );
  });

  it('names each stage still awaited: unpublished, not covered by the engine, or not ready at the revision', () => {
    const progressing: UnitSync = {
      engine: 'flux',
      source: 'Flux Kustomization flux-system/alpha',
      state: 'progressing',
      revision: 'main@sha1:old',
      message: 'Flux Kustomization flux-system/alpha applied main@sha1:old; waiting for it to apply commit new',
    };
    const decision = decideLifecycleHook(anInput({ sync: new Map([[CNI, progressing]]) }));
    expect(decision.waitingFor).toEqual([
      'stage cni: Flux Kustomization flux-system/alpha applied main@sha1:old; waiting for it to apply commit new',
      'stage metrics-server: a Flux Kustomization applying clusters/team/alpha/metrics-server (none covers it)',
    ]);
    const unpublished = decideLifecycleHook(anInput({ rendered: { ...anInput().rendered!, unpublished: [CNI] } }));
    expect(unpublished.waitingFor).toEqual(['stage cni: its manifests (clusters/team/alpha/cni) to be published']);
  });

  it('waits for the CEL conditions of the hook stages, naming the condition', () => {
    const decision = decideLifecycleHook(
      anInput({
        conditions: [
          { stage: 'cni', kind: 'postcondition', verdict: { holds: false, message: 'condition `x` is false' } },
          { stage: 'cni', kind: 'precondition', verdict: { holds: true, message: 'ok' } },
        ],
      }),
    );
    expect(decision).toMatchObject({
      status: 'Success',
      outcome: 'waiting',
      retryAfterSeconds: 10,
      waitingFor: ['stage cni postcondition: condition `x` is false'],
    });
  });

  it('lets the upgrade go once the wait lasts past the timeout, naming what was never confirmed, and never answers Failure', () => {
    const decision = decideLifecycleHook(
      anInput({
        conditions: [
          { stage: 'cni', kind: 'postcondition', verdict: { holds: false, message: 'condition `x` is false' } },
        ],
        now: 31 * MINUTE,
      }),
    );
    expect(decision).toEqual({
      status: 'Success',
      retryAfterSeconds: 0,
      outcome: 'timed-out',
      waitingFor: ['stage cni postcondition: condition `x` is false'],
      message:
        'letting the upgrade go after 31m (the hook timeout is 30m) without confirming: stage cni postcondition: condition `x` is false. Fix the addons or their conditions, or raise --hook-timeout',
    });
    expect(decideLifecycleHook(anInput({ sync: new Map(), now: 31 * MINUTE, onTimeout: 'proceed' }))).toMatchObject({
      status: 'Success',
      retryAfterSeconds: 0,
      outcome: 'timed-out',
    });
  });

  it('with --hook-on-timeout hold keeps holding BeforeClusterUpgrade after the timeout, asking to be called again (never Failure)', () => {
    const decision = decideLifecycleHook(
      anInput({ sync: new Map([[CNI, synced(CNI)]]), now: 31 * MINUTE, onTimeout: 'hold' }),
    );
    expect(decision).toEqual({
      status: 'Success',
      retryAfterSeconds: 10,
      outcome: 'timed-out',
      waitingFor: [
        'stage metrics-server: a Flux Kustomization applying clusters/team/alpha/metrics-server (none covers it)',
      ],
      message:
        'still holding the upgrade after 31m (the hook timeout is 30m) (--hook-on-timeout hold), not confirmed: stage metrics-server: a Flux Kustomization applying clusters/team/alpha/metrics-server (none covers it). Fix the addons or their conditions, or raise --hook-timeout',
    });
    // Only the upgrade gate holds: the other hooks let go after the timeout whatever the action.
    expect(
      decideLifecycleHook(
        anInput({ hook: 'AfterClusterUpgrade', sync: new Map(), now: 31 * MINUTE, onTimeout: 'hold' }),
      ),
    ).toMatchObject({ status: 'Success', retryAfterSeconds: 0, outcome: 'timed-out' });
  });

  it("answers the non-blocking AfterControlPlaneInitialized with Success while waiting (a Failure would stop the Cluster's reconcile), saying what it waits for", () => {
    const waiting = decideLifecycleHook(
      anInput({ hook: 'AfterControlPlaneInitialized', sync: new Map([[CNI, synced(CNI)]]) }),
    );
    expect(waiting).toMatchObject({ status: 'Success', retryAfterSeconds: 0, outcome: 'waiting' });
    expect(waiting.message).toBe(
      'not holding (AfterControlPlaneInitialized is non-blocking); the ClusterAddon follows the wait: waiting 60s of 30m for stage metrics-server: a Flux Kustomization applying clusters/team/alpha/metrics-server (none covers it)',
    );
    expect(decideLifecycleHook(anInput({ hook: 'AfterControlPlaneInitialized' }))).toMatchObject({
      status: 'Success',
      outcome: 'ready',
    });
    // Past the timeout: still Success (never an error loop), the outcome says it timed out.
    const late = decideLifecycleHook(
      anInput({ hook: 'AfterControlPlaneInitialized', sync: new Map(), now: 31 * MINUTE }),
    );
    expect(late).toMatchObject({ status: 'Success', retryAfterSeconds: 0, outcome: 'timed-out' });
    expect(late.message).toMatch(
      /^not holding the Cluster any longer after 31m \(the hook timeout is 30m\) without confirming: /,
    );
  });

  it('holds the next upgrade from AfterClusterUpgrade with retryAfterSeconds (Cluster API >= 1.12), and lets go without a Failure after the timeout', () => {
    const waiting = decideLifecycleHook(anInput({ hook: 'AfterClusterUpgrade', sync: new Map() }));
    expect(waiting).toMatchObject({ status: 'Success', retryAfterSeconds: 10, outcome: 'waiting' });
    const late = decideLifecycleHook(anInput({ hook: 'AfterClusterUpgrade', sync: new Map(), now: 31 * MINUTE }));
    expect(late).toMatchObject({ status: 'Success', retryAfterSeconds: 0, outcome: 'timed-out' });
  });

  it('never counts a stage as applied while the engine objects cannot be read: it waits naming why, bounded by the timeout', () => {
    const unreadable =
      'the controller to read Flux Kustomizations again: listing or watching them has failed for 40s (HTTP 403: forbidden)';
    const decision = decideLifecycleHook(anInput({ engineUnreadable: unreadable }));
    expect(decision).toMatchObject({
      status: 'Success',
      outcome: 'waiting',
      retryAfterSeconds: 10,
      waitingFor: [unreadable],
    });
    expect(decideLifecycleHook(anInput({ engineUnreadable: unreadable, now: 31 * MINUTE }))).toMatchObject({
      status: 'Success',
      retryAfterSeconds: 0,
      outcome: 'timed-out',
      waitingFor: [unreadable],
    });
    // Without an engine watched there is nothing to read.
    expect(decideLifecycleHook(anInput({ engine: 'none', engineUnreadable: unreadable }))).toMatchObject({
      outcome: 'ready',
    });
  });

  it("never takes a stage directory holding another release's files for the target release", () => {
    const decision = decideLifecycleHook(
      anInput({
        rendered: {
          ...anInput().rendered!,
          stages: [
            { dir: CNI, stage: 'cni', release: 'docker-ferrol-1-30-v1' },
            { dir: METRICS, stage: 'metrics-server', release: TARGET },
          ],
        },
      }),
    );
    expect(decision.waitingFor).toEqual([
      `stage cni: ${CNI} still holds release docker-ferrol-1-30-v1's addons, not release ${TARGET}'s`,
    ]);
  });

  it('does not hold Clusters whose class is no cluster stack class', () => {
    const { targetRelease: _target, ...input } = anInput();
    expect(decideLifecycleHook(input)).toMatchObject({ status: 'Success', outcome: 'not-ours', retryAfterSeconds: 0 });
  });

  it('holds while the addons are withheld, with the reason', () => {
    const decision = decideLifecycleHook(
      anInput({ rendered: { ...anInput().rendered!, withheld: 'spec.controlPlaneEndpoint.host is not set yet' } }),
    );
    expect(decision.waitingFor).toEqual([
      'the addons of release docker-ferrol-1-30-v3 for Cluster team/alpha, which are withheld: spec.controlPlaneEndpoint.host is not set yet',
    ]);
  });

  it('with no GitOps engine watched, lets the upgrade go once the addons are published, and says application is not checked', () => {
    const decision = decideLifecycleHook(anInput({ engine: 'none', sync: new Map() }));
    expect(decision).toMatchObject({ status: 'Success', outcome: 'ready' });
    expect(decision.message).toContain('application is not checked');
  });
});
