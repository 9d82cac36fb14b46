// The pure handover of addon objects between directories of one cluster: stage to stage, stage to
// layer, layer to stage, what cannot be handed over, and the marks written and taken off again.
import { describe, expect, it } from 'vitest';
import { EVERY_ENGINE_KEEP_MARKS as MARKS } from '../../gitops/wiring/keep-marks.js';
import { handOverAddonMoves, markedAgainstPrune, unmarkedText } from '../../src/render/addon-moves.js';
import { sha256Digest } from '../../src/release/content-digest.js';
import type { UnitRecord } from '../../src/output/provenance.js';
import { readPublishedState } from '../../src/output/published-state.js';
import { parseObject } from '../support/engine-schemas/wiring-checks.js';

const OBJECT =
  '# Source: chart/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: moving\n  namespace: kube-system\ndata:\n  key: value\n';
const C = 'clusters/fleet/one';

function record(dir: string, files: string[], extra: Partial<UnitRecord> = {}): UnitRecord {
  const layer = dir.includes('/layers/') ? dir.split('/').at(-1)! : undefined;
  return {
    dir,
    kind: layer ? 'cluster-layer' : 'cluster-stage',
    namespace: 'fleet',
    name: 'one',
    release: 'r',
    ...(layer
      ? { layer: { name: layer, version: '1.0.0', hold: false, dependsOn: [], afterStack: true, depth: 0 } }
      : { stage: dir.split('/').at(-1)! }),
    inputDigest: 'i',
    renderDigest: 'r',
    files,
    ...extra,
  };
}

/** A previous tree: the given files plus a provenance with the given records and handovers. */
function tree(
  files: Record<string, string>,
  units: UnitRecord[] = [],
  addonHandovers?: unknown[],
): Map<string, string> {
  return new Map([
    ...Object.entries(files),
    ['provenance.json', JSON.stringify({ units, ...(addonHandovers ? { addonHandovers } : {}) })],
  ]);
}

describe('handOverAddonMoves', () => {
  it.each([
    ['stage to stage', `${C}/cni`, `${C}/monitoring`],
    ['stage to layer', `${C}/cni`, `${C}/layers/base`],
    ['layer to stage', `${C}/layers/base`, `${C}/cni`],
  ])(
    'hands an object over %s: kept marked in the old directory, listed as written elsewhere by the new one',
    (_what, from, to) => {
      const previous = tree({
        [`${from}/configmap-moving.kube-system.yaml`]: OBJECT,
        [`${from}/kustomization.yaml`]: 'resources: []\n',
      });
      const rendered = new Map([
        [from, new Map<string, string>()],
        [to, new Map([['configmap-moving.kube-system.yaml', OBJECT]])],
      ]);
      const records = [record(from, []), record(to, ['configmap-moving.kube-system.yaml'])];
      const moves = handOverAddonMoves(readPublishedState(previous), rendered, records, MARKS);
      expect([...moves.files.keys()]).toEqual([`${from}/configmap-moving.kube-system.yaml`]);
      expect(parseObject(moves.files.get(`${from}/configmap-moving.kube-system.yaml`)!).metadata.annotations).toEqual({
        'kustomize.toolkit.fluxcd.io/prune': 'disabled',
        'argocd.argoproj.io/sync-options': 'Prune=false',
      });
      expect(rendered.get(to)!.size).toBe(0);
      expect(records[1]).toMatchObject({
        files: [],
        shared: { 'configmap-moving.kube-system.yaml': `${from}/configmap-moving.kube-system.yaml` },
      });
      expect(moves.handovers).toEqual([
        {
          path: `${from}/configmap-moving.kube-system.yaml`,
          from,
          to,
          file: 'configmap-moving.kube-system.yaml',
          digest: sha256Digest(OBJECT),
          group: '',
          kind: 'ConfigMap',
          namespace: 'kube-system',
          name: 'moving',
        },
      ]);
    },
  );

  it('completes a handover the previous render made to the same directory', () => {
    const path = `${C}/cni/configmap-moving.kube-system.yaml`;
    const previous = tree(
      { [path]: markedAgainstPrune(OBJECT, MARKS)! },
      [record(`${C}/cni`, [])],
      [
        {
          path,
          from: `${C}/cni`,
          to: `${C}/layers/base`,
          file: 'configmap-moving.kube-system.yaml',
          digest: sha256Digest(OBJECT),
        },
      ],
    );
    const rendered = new Map([
      [`${C}/cni`, new Map<string, string>()],
      [`${C}/layers/base`, new Map([['configmap-moving.kube-system.yaml', OBJECT]])],
    ]);
    const moves = handOverAddonMoves(
      readPublishedState(previous),
      rendered,
      [record(`${C}/cni`, []), record(`${C}/layers/base`, ['configmap-moving.kube-system.yaml'])],
      MARKS,
    );
    expect(moves.handovers).toEqual([]);
    expect(rendered.get(`${C}/layers/base`)!.get('configmap-moving.kube-system.yaml')).toBe(OBJECT);
  });

  it('leaves objects of other clusters, objects that stay, and objects still rendered where they were alone', () => {
    const previous = tree({
      [`clusters/fleet/two/cni/configmap-moving.kube-system.yaml`]: OBJECT,
      [`${C}/cni/configmap-moving.kube-system.yaml`]: OBJECT,
    });
    const rendered = new Map([
      [`${C}/cni`, new Map([['configmap-moving.kube-system.yaml', OBJECT]])],
      [`${C}/layers/base`, new Map([['configmap-moving.kube-system.yaml', OBJECT]])],
    ]);
    const moves = handOverAddonMoves(
      readPublishedState(previous),
      rendered,
      [
        record(`${C}/cni`, ['configmap-moving.kube-system.yaml']),
        record(`${C}/layers/base`, ['configmap-moving.kube-system.yaml']),
      ],
      MARKS,
    );
    expect(moves).toEqual({ files: new Map(), handovers: [], notes: [], warnings: [] });
  });

  it('says so when the old directory leaves the tree in the same commit, and hands nothing over', () => {
    const previous = tree({ [`${C}/layers/old/configmap-moving.kube-system.yaml`]: OBJECT });
    const rendered = new Map([[`${C}/layers/base`, new Map([['configmap-moving.kube-system.yaml', OBJECT]])]]);
    const moves = handOverAddonMoves(
      readPublishedState(previous),
      rendered,
      [record(`${C}/layers/base`, ['configmap-moving.kube-system.yaml'])],
      MARKS,
    );
    expect(moves.handovers).toEqual([]);
    expect(moves.warnings).toEqual([
      expect.stringContaining(
        `ConfigMap kube-system/moving moves from ${C}/layers/old/, which leaves the tree in the same commit`,
      ),
    ]);
    expect(moves.notes).toEqual([]);
  });

  it('does not annotate a SOPS-encrypted Secret (its MAC covers every value) and says so', () => {
    const secret =
      'apiVersion: v1\nkind: Secret\nmetadata:\n  name: token\n  namespace: kube-system\ndata:\n  t: ENC[AES256_GCM,data:x]\nsops:\n  mac: ENC[x]\n';
    const previous = tree({ [`${C}/cni/secret-token.kube-system.yaml`]: secret });
    const rendered = new Map([
      [`${C}/cni`, new Map<string, string>()],
      [`${C}/layers/base`, new Map([['secret-token.kube-system.yaml', secret]])],
    ]);
    const moves = handOverAddonMoves(
      readPublishedState(previous),
      rendered,
      [record(`${C}/cni`, []), record(`${C}/layers/base`, ['secret-token.kube-system.yaml'])],
      MARKS,
    );
    expect(moves.handovers).toEqual([]);
    expect(moves.warnings[0]).toContain(
      'without a handover (it cannot be annotated: an encrypted or unreadable document)',
    );
  });
});

describe('markedAgainstPrune and unmarkedText', () => {
  it('adds the marks as lines and takes them off again exactly', () => {
    const marked = markedAgainstPrune(OBJECT, MARKS)!;
    expect(marked).toBe(
      '# Source: chart/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n    argocd.argoproj.io/sync-options: Prune=false\n  name: moving\n  namespace: kube-system\ndata:\n  key: value\n',
    );
    expect(unmarkedText(marked, sha256Digest(OBJECT), MARKS)).toBe(OBJECT);
    expect(unmarkedText(marked, sha256Digest('something else'), MARKS)).toBeUndefined();
  });

  it("keeps the chart's other Argo CD sync options, and such a copy is rendered again rather than guessed back", () => {
    const withOptions = OBJECT.replace(
      '  name: moving\n',
      '  name: moving\n  annotations:\n    argocd.argoproj.io/sync-options: ServerSideApply=true\n',
    );
    const marked = markedAgainstPrune(withOptions, MARKS)!;
    expect(parseObject(marked).metadata.annotations).toEqual({
      'argocd.argoproj.io/sync-options': 'ServerSideApply=true,Prune=false',
      'kustomize.toolkit.fluxcd.io/prune': 'disabled',
    });
    expect(marked.startsWith('# Source: chart/templates/cm.yaml\n')).toBe(true);
    expect(unmarkedText(marked, sha256Digest(withOptions), MARKS)).toBeUndefined();
  });
});
