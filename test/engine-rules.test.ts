// The render names no engine: it follows the EngineRules gitops/wiring fills in for the chosen
// engine. These check the choice, and that the core works with any engine's marks through the
// interface alone (a made-up engine's mark is added and taken off again like Flux's and Argo CD's).
import { describe, expect, it } from 'vitest';
import { ARGOCD_HOOK_PHASES } from '../gitops/wiring/argocd-hook-phases.js';
import { engineRulesFor } from '../gitops/wiring/engine-rules.js';
import { EVERY_ENGINE_KEEP_MARKS } from '../gitops/wiring/keep-marks.js';
import type { KeepMarks } from '../src/core/engine-rules.js';
import { sha256Digest } from '../src/release/content-digest.js';
import { markedAgainstPrune, unmarkedText } from '../src/render/addon-moves.js';
import { hookPlacementOf, placeHelmHooks } from '../src/render/helm-hooks.js';

const OBJECT =
  'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: moving\n  namespace: kube-system\ndata:\n  key: value\n';

describe('engineRulesFor', () => {
  it('gives every engine both keep marks (the tree outlives the engine choice) and only Argo CD its hook phases', () => {
    for (const engine of ['none', 'flux', 'argocd', undefined] as const)
      expect(engineRulesFor(engine).keepMarks).toBe(EVERY_ENGINE_KEEP_MARKS);
    expect(engineRulesFor('argocd').hookPhases).toBe(ARGOCD_HOOK_PHASES);
    expect(engineRulesFor('flux').hookPhases).toBeUndefined();
    expect(engineRulesFor('none').hookPhases).toBeUndefined();
    expect(hookPlacementOf(engineRulesFor('argocd').hookPhases)).toBe('argocd');
    expect(hookPlacementOf(engineRulesFor('flux').hookPhases)).toBe('staged');
  });

  it("marks with both engines' annotations, replacing any other Prune= option and keeping the rest", () => {
    expect(
      EVERY_ENGINE_KEEP_MARKS.annotationsFor({ 'argocd.argoproj.io/sync-options': 'Prune=true, ServerSideApply=true' }),
    ).toEqual({
      'kustomize.toolkit.fluxcd.io/prune': 'disabled',
      'argocd.argoproj.io/sync-options': 'ServerSideApply=true,Prune=false',
    });
    expect(EVERY_ENGINE_KEEP_MARKS.isMarkLine('    kustomize.toolkit.fluxcd.io/prune: disabled')).toBe(true);
    expect(
      EVERY_ENGINE_KEEP_MARKS.isMarkLine('    argocd.argoproj.io/sync-options: ServerSideApply=true,Prune=false'),
    ).toBe(false);
  });
});

describe('the render through EngineRules alone', () => {
  it('hands an object over with whatever marks it is given, and reads it back without them', () => {
    const other: KeepMarks = {
      annotationsFor: () => ({ 'example.test/keep': 'kept' }),
      isMarkLine: (line) => /^\s+example\.test\/keep: kept$/.test(line),
    };
    const marked = markedAgainstPrune(OBJECT, other)!;
    expect(marked).toBe(
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n    example.test/keep: kept\n  name: moving\n  namespace: kube-system\ndata:\n  key: value\n',
    );
    expect(unmarkedText(marked, sha256Digest(OBJECT), other)).toBe(OBJECT);
    // Flux's and Argo CD's marks are not this engine's: the copy is not taken for unmarked.
    expect(
      unmarkedText(markedAgainstPrune(OBJECT, EVERY_ENGINE_KEEP_MARKS)!, sha256Digest(OBJECT), other),
    ).toBeUndefined();
  });

  it("leaves hooks in place, described in the engine's words, when the engine maps them itself", () => {
    const hook = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'migrate', annotations: { 'helm.sh/hook': 'pre-install' } },
    };
    const phases = { ...ARGOCD_HOOK_PHASES, engine: 'Some Engine' };
    const placed = placeHelmHooks([hook], 'default', phases);
    expect(placed.files).toEqual(['job-migrate.yaml']);
    expect(placed.hooks[0]).toMatchObject({
      decision: 'before',
      reason: 'Some Engine runs it as a PreSync hook, before the other objects (helm.sh/hook pre-install)',
    });
    expect(placeHelmHooks([hook], 'default', undefined).files).toEqual(['helm-hooks/pre-w0/job-migrate.yaml']);
  });
});
