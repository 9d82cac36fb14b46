import { describe, expect, it } from 'vitest';
import { conditionSyntaxError, evaluateWaitCondition, type WaitCondition } from '../src/core/addon-wait-conditions.js';
import { parseClusterAddonConfig } from '../src/release/cluster-addon-config.js';

const kindnetReady: WaitCondition = {
  objects: [{ key: 'kindnet', apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'kindnet', namespace: 'kube-system' }],
  conditions: 'kindnet.status.numberReady > 0 && kindnet.status.numberReady == kindnet.status.desiredNumberScheduled\n',
};

const daemonSet = (ready: number, desired: number) => ({
  apiVersion: 'apps/v1',
  kind: 'DaemonSet',
  metadata: { name: 'kindnet', namespace: 'kube-system' },
  status: { numberReady: ready, desiredNumberScheduled: desired },
});

describe('evaluateWaitCondition', () => {
  it('binds each object to its key and holds when the expression is true (JSON numbers compare with CEL ints)', () => {
    expect(evaluateWaitCondition(kindnetReady, new Map([['kindnet', daemonSet(3, 3)]]))).toEqual({
      holds: true,
      message: expect.stringContaining('holds'),
    });
  });

  it('does not hold while the expression is false, and names it', () => {
    const verdict = evaluateWaitCondition(kindnetReady, new Map([['kindnet', daemonSet(1, 3)]]));
    expect(verdict).toEqual({
      holds: false,
      message:
        'condition `kindnet.status.numberReady > 0 && kindnet.status.numberReady == kindnet.status.desiredNumberScheduled` is false',
    });
  });

  it('waits for an object that does not exist yet, naming it', () => {
    expect(evaluateWaitCondition(kindnetReady, new Map([['kindnet', undefined]]))).toEqual({
      holds: false,
      message: 'waits for DaemonSet kube-system/kindnet (kindnet) to exist in the workload cluster',
    });
  });

  it('does not hold when a field the expression reads is absent (a fresh object without status)', () => {
    const verdict = evaluateWaitCondition(kindnetReady, new Map([['kindnet', { metadata: { name: 'kindnet' } }]]));
    expect(verdict.holds).toBe(false);
    expect(verdict.message).toMatch(/^condition `.*` cannot be evaluated yet: No such key: status$/);
  });

  it('supports the CEL macros stacks use on conditions lists', () => {
    const condition: WaitCondition = {
      objects: [
        { key: 'cilium', apiVersion: 'apps/v1', kind: 'Deployment', name: 'cilium-operator', namespace: 'kube-system' },
      ],
      conditions: 'cilium.status.conditions.exists(c, c.type == "Available" && c.status == "True")',
    };
    expect(
      evaluateWaitCondition(
        condition,
        new Map([['cilium', { status: { conditions: [{ type: 'Available', status: 'True' }] } }]]),
      ).holds,
    ).toBe(true);
    expect(
      evaluateWaitCondition(
        condition,
        new Map([['cilium', { status: { conditions: [{ type: 'Available', status: 'False' }] } }]]),
      ).holds,
    ).toBe(false);
  });

  it('reports an expression that is not CEL, or not a bool, as a problem of clusteraddon.yaml', () => {
    const broken = evaluateWaitCondition(
      { ...kindnetReady, conditions: 'kindnet.status.numberReady >' },
      new Map([['kindnet', daemonSet(1, 1)]]),
    );
    expect(broken).toEqual({
      holds: false,
      message: expect.stringMatching(/^condition `kindnet.status.numberReady >` is not valid CEL: /),
    });
    expect(conditionSyntaxError('kindnet.status.numberReady >')).toMatch(/Unexpected token/);
    expect(conditionSyntaxError(kindnetReady.conditions)).toBeUndefined();
    const notBool = evaluateWaitCondition(
      { ...kindnetReady, conditions: 'kindnet.status.numberReady' },
      new Map([['kindnet', daemonSet(1, 1)]]),
    );
    expect(notBool.holds).toBe(false);
    expect(notBool.message).toContain('not a bool');
  });
});

describe('parseClusterAddonConfig and CEL', () => {
  it('warns at load about a condition that is not valid CEL, naming its path, and keeps the release', () => {
    const text = [
      'addonStages:',
      '  BeforeClusterUpgrade:',
      '    - name: cni',
      '      action: apply',
      '      waitForPostCondition:',
      '        objects: [{key: ds, apiVersion: apps/v1, kind: DaemonSet, name: kindnet, namespace: kube-system}]',
      '        conditions: "ds.status.numberReady >"',
      '',
    ].join('\n');
    const parsed = parseClusterAddonConfig(text, 'r/clusteraddon.yaml');
    expect(parsed.problems).toEqual([]);
    expect(parsed.config?.addonStages.BeforeClusterUpgrade?.[0]?.waitForPostCondition?.conditions).toBe(
      'ds.status.numberReady >',
    );
    expect(parsed.warnings).toEqual([
      {
        source: 'r/clusteraddon.yaml',
        path: 'addonStages.BeforeClusterUpgrade[0].waitForPostCondition.conditions',
        message: expect.stringMatching(
          /^is not valid CEL \(Unexpected token: EOF\): a lifecycle hook waiting on it can only time out/,
        ),
      },
    ]);
  });
});
