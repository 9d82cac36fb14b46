// Objects moving between the addon directories of one workload cluster (stage to stage, stage to
// layer, layer to layer) without the engine deleting and re-creating them. Each directory has its
// own owner (a Flux Kustomization, an Argo CD Application) and owners reconcile a new revision in
// no set order. An owner deletes an object that left its directory only when the live object is
// still its own and not marked: Flux's garbage collection skips objects whose
// owner labels name another Kustomization or that carry its keep mark (checked after the owner
// applied the same revision); Argo CD prunes only objects whose tracking names the
// Application, and skips live objects marked against pruning (gitops/wiring/keep-marks.ts has both
// engines' marks and their sources). Both read the mark on the live object, so the mark must be applied
// by the old owner before the object leaves it. Hence a move takes two renders:
//   1. handover: the object stays in its old directory, written as the new one renders it plus both
//      marks; the new directory lists it under `shared` (written elsewhere). The old owner applies
//      the marks; nothing leaves any directory, so no order can delete it.
//   2. the next render writes it, unmarked, in the new directory only. Whichever owner goes first,
//      the old one finds the live object either marked or already labelled/tracked by the new one.
// A handover whose old directory is an addon layer on hold stays a handover while it is held and
// for the render that lifts the hold (a suspended owner applies nothing, so its marks reach the
// cluster only with the first revision it applies again).
// Pure: works on the rendered units and the previous tree.
import type { AddonHandoverRecord, UnitRecord } from '../output/provenance.js';
import type { PublishedState } from '../output/published-state.js';
import type { RenderedTree } from '../output/rendered-tree.js';
import { KUSTOMIZATION_FILE, unitOfPath } from '../output/tree-layout.js';
import { sha256Digest } from '../release/content-digest.js';
import { withAnnotations } from './manifest-objects.js';
import { describeIdentity, identityOfText } from './shared-objects.js';
import { compareText } from '../core/compare-text.js';
import type { KeepMarks } from '../core/engine-rules.js';

/** The object's text with the engines' keep marks; undefined when that cannot be written. */
export function markedAgainstPrune(text: string, marks: KeepMarks): string | undefined {
  return withAnnotations(text, (existing) => marks.annotationsFor(existing));
}

/**
 * The unmarked text of a handover copy, when it can be recovered exactly (its digest is the one
 * recorded): the lines the marks added are taken out again. Undefined otherwise (the unit is then
 * rendered again instead of reused).
 */
export function unmarkedText(marked: string, digest: string, marks: KeepMarks): string | undefined {
  const lines = marked.split('\n');
  const added = lines.map((line, index) => ({ line, index })).filter(({ line }) => marks.isMarkLine(line));
  const drop = new Set(added.map(({ index }) => index));
  // An `annotations:` line the marks brought with them is left without children: drop it too.
  const candidates = [
    drop,
    new Set([
      ...drop,
      ...added
        .map(({ index }) => index - 1)
        .filter((index) => index >= 0 && /^\s+annotations:\s*$/.test(lines[index]!)),
    ]),
  ];
  for (const skip of candidates) {
    const text = lines.filter((_, index) => !skip.has(index)).join('\n');
    if (sha256Digest(text) === digest) return text;
  }
  return undefined;
}

interface Home {
  dir: string;
  path: string;
}

/** Where each addon object of a tree lives: `<cluster dir>\0<identity key>` -> its unit directories. */
function addonHomes(tree: Iterable<[string, string]>): Map<string, Home[]> {
  const homes = new Map<string, Home[]>();
  for (const [path, text] of tree) {
    if (path.endsWith(`/${KUSTOMIZATION_FILE}`)) continue;
    const unit = unitOfPath(path);
    if (!unit || (unit.kind !== 'cluster-stage' && unit.kind !== 'cluster-layer')) continue;
    const found = identityOfText(text);
    if (!found) continue;
    const key = `${unit.clusterDir}\u0000${found.key}`;
    homes.set(key, [...(homes.get(key) ?? []), { dir: unit.dir, path }]);
  }
  return homes;
}

function clusterDirOf(dir: string): string {
  return dir.split('/').slice(0, 3).join('/');
}

function isAddonRecord(record: UnitRecord): boolean {
  return record.kind === 'cluster-stage' || record.kind === 'cluster-layer';
}

/**
 * The cluster directories whose addon units differ from the previous tree's (another set of
 * directories, or a unit whose render inputs changed), or that had a handover in progress.
 */
function clustersWithChangedAddons(
  previousUnits: readonly UnitRecord[],
  records: readonly UnitRecord[],
  handedOver: ReadonlyMap<string, AddonHandoverRecord>,
): Set<string> {
  const signatures = (units: readonly UnitRecord[]): Map<string, string[]> => {
    const byCluster = new Map<string, string[]>();
    for (const unit of units) {
      if (!isAddonRecord(unit)) continue;
      const cluster = clusterDirOf(unit.dir);
      if (!byCluster.has(cluster)) byCluster.set(cluster, []);
      byCluster.get(cluster)!.push(`${unit.dir} ${unit.renderDigest}`);
    }
    return byCluster;
  };
  const before = signatures(previousUnits);
  const now = signatures(records);
  const changed = new Set<string>();
  for (const cluster of new Set([...before.keys(), ...now.keys()])) {
    if (
      (before.get(cluster) ?? []).sort(compareText).join('\n') !== (now.get(cluster) ?? []).sort(compareText).join('\n')
    )
      changed.add(cluster);
  }
  for (const handover of handedOver.values()) changed.add(clusterDirOf(handover.from));
  return changed;
}

/** The entries of `tree` under the given cluster directories. */
function* entriesOfClusters(tree: RenderedTree, clusters: Set<string>): Iterable<[string, string]> {
  for (const entry of tree) {
    const [top, namespace, cluster] = entry[0].split('/', 3);
    if (top === 'clusters' && clusters.has(`${top}/${namespace}/${cluster}`)) yield entry;
  }
}

export interface AddonMoves {
  /** Marked copies to write (tree path -> text), beside the units' own files. */
  files: Map<string, string>;
  handovers: AddonHandoverRecord[];
  /** Handovers in progress: in the tree's README (the next render changes the tree anyway). */
  notes: string[];
  /** Moves that could not be handed over: said for this run only, so the next render does not commit just to drop them. */
  warnings: string[];
}

/**
 * Finds the addon objects that changed directory within their cluster since `previous` and hands
 * them over (see the top of this file): takes each out of its new directory (listing it there
 * under `shared`) and returns its copy, marked with `marks`, for the old one. Mutates `rendered` and `records`.
 */
export function handOverAddonMoves(
  published: PublishedState,
  rendered: Map<string, Map<string, string>>,
  records: UnitRecord[],
  marks: KeepMarks,
): AddonMoves {
  const moves: AddonMoves = { files: new Map(), handovers: [], notes: [], warnings: [] };
  const previousUnits = [...published.units.values()];
  // Only a cluster whose addon units changed can have an object that moved: the others keep every
  // file where it was (their objects are not even looked at, which at thousands of clusters is most
  // of this function's time).
  const changed = clustersWithChangedAddons(previousUnits, records, published.addonHandovers);
  if (changed.size === 0) return moves;
  const before = addonHomes(entriesOfClusters(published.tree, changed));
  if (before.size === 0) return moves;
  const addonRecords = records
    .filter((record) => isAddonRecord(record) && changed.has(clusterDirOf(record.dir)))
    .sort((a, b) => compareText(a.dir, b.dir));
  const scan: MoveScan = {
    rendered,
    marks,
    moves,
    before,
    now: addonHomes(
      addonRecords.flatMap((record) =>
        [...(rendered.get(record.dir) ?? [])].map(([file, text]): [string, string] => [`${record.dir}/${file}`, text]),
      ),
    ),
    handedOver: published.addonHandovers,
    heldBefore: new Set(previousUnits.filter((unit) => unit.layer?.hold === true).map((unit) => unit.dir)),
    recordOf: new Map(records.map((record) => [record.dir, record])),
  };
  for (const record of addonRecords) {
    const files = rendered.get(record.dir);
    if (!files) continue;
    for (const [file, text] of [...files].sort(([a], [b]) => compareText(a, b))) handOverMove(scan, record, file, text);
  }
  moves.handovers.sort((a, b) => compareText(a.path, b.path));
  moves.notes.sort(compareText);
  moves.warnings.sort(compareText);
  return moves;
}

/** What one handOverAddonMoves run looks at, and the moves it has found so far. */
interface MoveScan {
  rendered: Map<string, Map<string, string>>;
  marks: KeepMarks;
  moves: AddonMoves;
  /** Where each addon object of the changed clusters lived in the published tree, and lives now. */
  before: Map<string, Home[]>;
  now: Map<string, Home[]>;
  handedOver: ReadonlyMap<string, AddonHandoverRecord>;
  /** Layer directories that were on hold in the published tree. */
  heldBefore: Set<string>;
  recordOf: Map<string, UnitRecord>;
}

/** Where a rendered object lived before when it moved there from another directory of its cluster. */
function movedFrom(
  scan: MoveScan,
  record: UnitRecord,
  text: string,
): { from: Home; found: NonNullable<ReturnType<typeof identityOfText>> } | undefined {
  const found = identityOfText(text);
  if (!found) return undefined;
  const homes = scan.before.get(`${clusterDirOf(record.dir)}\u0000${found.key}`);
  if (!homes || homes.some((home) => home.dir === record.dir)) return undefined;
  // Still rendered where it was (two directories render it now): not a move.
  const current = new Set(
    (scan.now.get(`${clusterDirOf(record.dir)}\u0000${found.key}`) ?? []).map((home) => home.dir),
  );
  if (homes.some((home) => current.has(home.dir))) return undefined;
  return { from: [...homes].sort((a, b) => compareText(a.path, b.path))[0]!, found };
}

/** Hands one rendered file over when its object moved, or warns why it cannot be. */
function handOverMove(scan: MoveScan, record: UnitRecord, file: string, text: string): void {
  const { moves, rendered } = scan;
  const move = movedFrom(scan, record, text);
  if (!move) return;
  const { from, found } = move;
  const subject = describeIdentity(found.identity);
  const earlier = scan.handedOver.get(from.path);
  const fromRecord = scan.recordOf.get(from.dir);
  // A held owner applies nothing: the marks reach the cluster only in the render after the hold is lifted.
  const held = fromRecord?.layer?.hold === true || scan.heldBefore.has(from.dir);
  // Handed over in the previous render to this directory (and applied by then): the move completes now.
  if (earlier && earlier.to === record.dir && !held) return;
  if (!fromRecord || !rendered.has(from.dir)) {
    moves.warnings.push(
      `${subject} moves from ${from.dir}/, which leaves the tree in the same commit, to ${record.dir}/: its old owner may delete it before the new one applies it (it is then created again); keep the old directory one render longer to have it handed over safely`,
    );
    return;
  }
  const name = from.path.slice(from.dir.length + 1);
  const marked = /^sops:/m.test(text) ? undefined : markedAgainstPrune(text, scan.marks);
  if (marked === undefined || rendered.get(from.dir)!.has(name) || moves.files.has(from.path)) {
    moves.warnings.push(
      `${subject} moves from ${from.dir}/ to ${record.dir}/ without a handover (${marked === undefined ? 'it cannot be annotated: an encrypted or unreadable document' : `${from.dir}/${name} is taken by another object`}): its old owner may delete it before the new one applies it`,
    );
    return;
  }
  rendered.get(record.dir)!.delete(file);
  record.files = record.files.filter((entry) => entry !== file);
  record.shared = Object.fromEntries(
    Object.entries({ ...record.shared, [file]: from.path }).sort(([a], [b]) => compareText(a, b)),
  );
  moves.files.set(from.path, marked);
  moves.handovers.push({
    path: from.path,
    from: from.dir,
    to: record.dir,
    file,
    digest: sha256Digest(text),
    ...found.identity,
  });
  moves.notes.push(
    held
      ? `${subject} moves from ${from.dir}/ to ${record.dir}/: it stays in ${from.dir}/, marked against pruning, while that layer is on hold and for the render that lifts the hold; the render after that completes the move`
      : `${subject} moves from ${from.dir}/ to ${record.dir}/: this render keeps it in ${from.dir}/, marked so neither Flux nor Argo CD prunes it; the next render completes the move`,
  );
}
