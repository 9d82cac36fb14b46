import { describe, expect, it } from 'vitest';
import type { Publisher, PublishResult } from '../../gitops/publisher.js';
import type { RenderedTree } from '../../src/output/rendered-tree.js';
import { dirtyUnitDirs, PublishTracker } from '../../src/controller/reconcile/publish-tracker.js';

const CHANGE = { title: 'Render', body: '', trailers: {} };

/** A target that takes every tree and names its commits c1, c2, ... */
function countingPublisher(): Publisher {
  let commits = 0;
  return {
    target: 'fake',
    readPrevious: async () => new Map(),
    publish: async (): Promise<PublishResult> => ({
      changed: true,
      written: [],
      removed: [],
      revision: `c${++commits}`,
    }),
  } as unknown as Publisher;
}

function tree(files: Record<string, string>): RenderedTree {
  return new Map(Object.entries(files));
}

describe('dirtyUnitDirs', () => {
  it('names the unit directories with a written, changed or removed file, not those with only a kustomization change', () => {
    const before = tree({
      'clusters/ns/a/addons/x.yaml': '1',
      'clusters/ns/b/addons/x.yaml': '1',
      'clusters/ns/c/addons/kustomization.yaml': '1',
      'clusters/ns/gone/addons/x.yaml': '1',
    });
    const after = tree({
      'clusters/ns/a/addons/x.yaml': '2',
      'clusters/ns/b/addons/x.yaml': '1',
      'clusters/ns/c/addons/kustomization.yaml': '2',
      'clusters/ns/new/addons/x.yaml': '1',
    });
    expect([...dirtyUnitDirs(before, after)].sort()).toEqual([
      'clusters/ns/a/addons',
      'clusters/ns/gone/addons',
      'clusters/ns/new/addons',
    ]);
  });
});

describe('PublishTracker', () => {
  it('hands the publisher the files that differ from the tree it holds, compared once', async () => {
    const calls: unknown[] = [];
    const publisher = {
      target: 'fake',
      readPrevious: async () => tree({ 'clusters/ns/a/addons/x.yaml': '1', 'clusters/ns/b/addons/x.yaml': '1' }),
      publish: async (_tree: RenderedTree, _change: unknown, known: unknown): Promise<PublishResult> => {
        calls.push(known);
        return { changed: true, written: [], removed: [], revision: `c${calls.length}` };
      },
    } as unknown as Publisher;
    const tracker = new PublishTracker(publisher, { revisionKind: 'commit', resyncMs: 60_000 });
    const held = await tracker.previousTree();
    const next = tree({ 'clusters/ns/a/addons/x.yaml': '2', 'clusters/ns/c/addons/x.yaml': '1' });
    await tracker.publish(next, CHANGE);
    expect(calls).toEqual([
      {
        previous: held,
        written: ['clusters/ns/a/addons/x.yaml', 'clusters/ns/c/addons/x.yaml'],
        removed: ['clusters/ns/b/addons/x.yaml'],
      },
    ]);
    expect((calls[0] as { previous: RenderedTree }).previous).toBe(held);
  });

  it('names for each unit directory the commit that last changed it, across publishes that add, change and remove directories', async () => {
    const tracker = new PublishTracker(countingPublisher(), { revisionKind: 'commit', resyncMs: 60_000 });
    const first = await tracker.publish(
      tree({
        'clusters/ns/a/addons/x.yaml': '1',
        'clusters/ns/a/addons/y.yaml': '1',
        'clusters/ns/b/addons/x.yaml': '1',
        'management/ns/r1/cc.yaml': '1',
      }),
      CHANGE,
    );
    expect(Object.fromEntries(first.state.order.unitRevisions)).toEqual({
      'clusters/ns/a/addons': 'c1',
      'clusters/ns/b/addons': 'c1',
      'management/ns/r1': 'c1',
    });

    // a loses one of its two files (stays), b changes, r1 goes, c comes.
    const second = await tracker.publish(
      tree({
        'clusters/ns/a/addons/x.yaml': '1',
        'clusters/ns/b/addons/x.yaml': '2',
        'clusters/ns/c/addons/x.yaml': '1',
      }),
      CHANGE,
    );
    expect(Object.fromEntries(second.state.order.unitRevisions)).toEqual({
      'clusters/ns/a/addons': 'c2',
      'clusters/ns/b/addons': 'c2',
      'clusters/ns/c/addons': 'c2',
    });

    // a loses its last file; c is untouched and keeps its commit.
    const third = await tracker.publish(
      tree({ 'clusters/ns/b/addons/x.yaml': '3', 'clusters/ns/c/addons/x.yaml': '1' }),
      CHANGE,
    );
    expect(Object.fromEntries(third.state.order.unitRevisions)).toEqual({
      'clusters/ns/b/addons': 'c3',
      'clusters/ns/c/addons': 'c2',
    });
    expect(third.state.order.history).toEqual(['c1', 'c2', 'c3']);
  });
});
