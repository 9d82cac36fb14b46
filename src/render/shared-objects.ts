// Objects more than one unit renders. On the management side every kept release renders its own
// cluster-class chart, and charts shaped like openstack/scs render the node image (an ORC `Image`
// named after the Kubernetes patch version) in every release of that patch: written per release it
// would be one object with two owners (kustomize refuses the duplicate; Flux Kustomizations and
// Argo CD Applications fight over it, and dropping one release would prune what the other still
// uses). So an object is identified as Kubernetes does (API group, kind, namespace after our
// placement, name), and
//   - rendered alike by several releases, it is written once, in `management/<ns>/shared/`, with the
//     releases that render it recorded (reference counting: it leaves the tree with the last one);
//   - rendered differently, it is a conflict: the newer release is withheld, naming the older one;
//   - on the addon side, two stages of one cluster rendering it alike keep it in the earlier stage
//     only, differently withhold the cluster.
// Pure: works on the files of the rendered units (read with Kubernetes' YAML), writes nothing.
import { tryParseReleaseTag } from '../core/release-tag.js';
import { compareStackVersions } from '../core/stack-version.js';
import type { SharedObjectRecord, UnitRecord } from '../output/provenance.js';
import { clusterDir, SHARED_DIR_NAME as SHARED, sharedDir } from '../output/tree-layout.js';
import { decodeYamlDocument, sameYamlValue } from '../yaml/kube-yaml.js';
import { fileNamesFor } from './manifest-objects.js';
import { apiGroup } from '../api/object-scope.js';
import type { KubeObject } from '../api/types.js';
import { compareText } from '../core/compare-text.js';

/** What Kubernetes tells objects apart by; `group` '' is the core group, `namespace` '' cluster-scoped. */
export interface ObjectIdentity {
  group: string;
  kind: string;
  namespace: string;
  name: string;
}

interface UnitObject {
  record: UnitRecord;
  file: string;
  text: string;
  /** The decoded object; decoded on first use (only objects rendered more than once need it). */
  readonly value: KubeObject;
  identity: ObjectIdentity;
  key: string;
}

/** `Image.openstack.k-orc.cloud fleet/ubuntu-capi-image-v1.32.5` (kind.group namespace/name). */
export function describeIdentity(identity: ObjectIdentity): string {
  const kind = identity.group === '' ? identity.kind : `${identity.kind}.${identity.group}`;
  return `${kind} ${identity.namespace === '' ? '' : `${identity.namespace}/`}${identity.name}`;
}

function identityKey(identity: ObjectIdentity): string {
  return `${identity.group}\u0000${identity.kind}\u0000${identity.namespace}\u0000${identity.name}`;
}

const SIMPLE_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const YAML11_WORD = /^(y|yes|n|no|true|false|on|off|null)$/i;

/** A scalar that reads as the same string in go-yaml v2 and in this pattern, or undefined. */
function plainString(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const value = raw
    .replace(/\s+#.*$/, '')
    .trim()
    .replace(/^"(.*)"$|^'(.*)'$/, '$1$2');
  if (!SIMPLE_NAME.test(value) || YAML11_WORD.test(value) || (/^[-+.\d]/.test(value) && !/[A-Za-z]/.test(value)))
    return undefined;
  return value;
}

/** The rest of the top-level line `key:` (first occurrence), or undefined. */
function topLevel(text: string, key: string): string | undefined {
  const at = text.startsWith(`${key}:`) ? 0 : text.indexOf(`\n${key}:`) + 1;
  if (at <= 0 && !text.startsWith(`${key}:`)) return undefined;
  const from = at + key.length + 1;
  const end = text.indexOf('\n', from);
  return text.slice(from, end < 0 ? text.length : end);
}

/**
 * The identity of a block-style document read from its top-level lines, without decoding it:
 * every object of every unit needs one on every render, and decoding them all would be the bulk of
 * the cost. The files read here are ours: documents with duplicate keys or YAML 1.1-only scalars
 * were re-encoded when written (manifest-objects.ts), so the first `kind:` is the kind. Undefined
 * whenever the layout is anything but plain; the document is then decoded.
 */
function quickIdentity(text: string): ObjectIdentity | undefined {
  const [group, version, ...rest] = (topLevel(text, 'apiVersion') ?? '').trim().split('/');
  const apiVersion =
    rest.length > 0 || !plainString(group) || (version !== undefined && !plainString(version))
      ? undefined
      : `${group}${version === undefined ? '' : `/${version}`}`;
  const kind = plainString(topLevel(text, 'kind'));
  const metadataAt = text.startsWith('metadata:') ? 0 : text.indexOf('\nmetadata:') + 1;
  if (!apiVersion || !kind || (metadataAt <= 0 && !text.startsWith('metadata:'))) return undefined;
  let line = text.indexOf('\n', metadataAt);
  if (
    text
      .slice(metadataAt + 'metadata:'.length, line < 0 ? undefined : line)
      .replace(/#.*/, '')
      .trim() !== ''
  )
    return undefined; // flow style
  let indent: string | undefined;
  const fields = new Map<string, string>();
  while (line >= 0) {
    const next = text.indexOf('\n', line + 1);
    const content = text.slice(line + 1, next < 0 ? text.length : next);
    line = next;
    if (/^[ \t]*(#.*)?$/.test(content)) continue;
    const lead = /^[ \t]*/.exec(content)![0];
    if (lead === '') break; // the next top-level key
    indent ??= lead;
    if (lead !== indent) continue; // deeper: labels, annotations
    const colon = content.indexOf(':');
    if (colon < 0) return undefined;
    const key = content.slice(lead.length, colon);
    if (fields.has(key)) return undefined;
    fields.set(key, content.slice(colon + 1));
  }
  if (fields.has('generateName') || fields.has('<<')) return undefined;
  const name = plainString(fields.get('name'));
  const namespace = fields.has('namespace') ? plainString(fields.get('namespace')) : '';
  if (!name || namespace === undefined) return undefined;
  return { group: apiGroup(apiVersion), kind, namespace, name };
}

function decodeObject(text: string): KubeObject | undefined {
  let value: unknown;
  try {
    value = decodeYamlDocument(text).value;
  } catch {
    return undefined; // written by us from a decoded document; nothing to identify
  }
  const object = value as KubeObject | null;
  if (
    !object ||
    typeof object.kind !== 'string' ||
    typeof object.apiVersion !== 'string' ||
    typeof object.metadata?.name !== 'string'
  )
    return undefined;
  return object;
}

/** The identity of one written object's text and its key (for maps), or undefined when it is no object. */
export function identityOfText(text: string): { identity: ObjectIdentity; key: string } | undefined {
  let identity = quickIdentity(text);
  if (!identity) {
    const decoded = decodeObject(text);
    if (!decoded) return undefined;
    identity = {
      group: apiGroup(decoded.apiVersion),
      kind: decoded.kind,
      namespace: decoded.metadata.namespace ?? '',
      name: decoded.metadata.name,
    };
  }
  return { identity, key: identityKey(identity) };
}

interface FileObject {
  file: string;
  text: string;
  identity: ObjectIdentity;
  key: string;
  decoded?: KubeObject;
}

// Identities per unit file set, for the passes of one render (conflicts, placement): keyed by the
// files' Map, so nothing outlives the render that holds it.
const IDENTITIES = new WeakMap<Map<string, string>, FileObject[]>();

function fileObjects(files: Map<string, string>): FileObject[] {
  const cached = IDENTITIES.get(files);
  if (cached) return cached;
  const objects: FileObject[] = [];
  for (const [file, text] of files) {
    let decoded: KubeObject | undefined;
    let identity = quickIdentity(text);
    if (!identity) {
      decoded = decodeObject(text);
      if (!decoded) continue;
      identity = {
        group: apiGroup(decoded.apiVersion),
        kind: decoded.kind,
        namespace: decoded.metadata.namespace ?? '',
        name: decoded.metadata.name,
      };
    }
    objects.push({ file, text, identity, key: identityKey(identity), ...(decoded ? { decoded } : {}) });
  }
  IDENTITIES.set(files, objects);
  return objects;
}

/**
 * Reads the identities of a unit's objects now, for the conflict and placement passes at the end
 * of the render: called as each unit renders, while helm still runs, so that the end does not read
 * every object of the tree at once. `files` must not change afterwards (the passes key on it).
 */
export function identifyUnitObjects(files: Map<string, string>): void {
  fileObjects(files);
}

/** The objects of one unit's files; files that do not decode to an object are left where they are. */
function unitObjects(record: UnitRecord, files: Map<string, string>): UnitObject[] {
  return fileObjects(files).map((entry) => ({
    record,
    file: entry.file,
    text: entry.text,
    identity: entry.identity,
    key: entry.key,
    get value(): KubeObject {
      entry.decoded ??= decodeObject(entry.text);
      return entry.decoded!;
    },
  }));
}

/** The version part of an object's apiVersion (`openstack.k-orc.cloud/v1alpha1` -> `v1alpha1`). */
function versionOf(object: KubeObject): string {
  return object.apiVersion.slice(object.apiVersion.indexOf('/') + 1);
}

/**
 * Orders release units oldest first: by stack version when both releases are of one stack and
 * channel (numerically, `v1-alpha.9` before `v1-alpha.10`), otherwise by tag; then by directory.
 */
function olderReleaseFirst(a: UnitRecord, b: UnitRecord): number {
  const tagA = tryParseReleaseTag(a.release);
  const tagB = tryParseReleaseTag(b.release);
  if (
    tagA &&
    tagB &&
    tagA.provider === tagB.provider &&
    tagA.name === tagB.name &&
    tagA.kubernetesMajor === tagB.kubernetesMajor &&
    tagA.kubernetesMinor === tagB.kubernetesMinor
  ) {
    const order = compareStackVersions(tagA.version, tagB.version);
    if (order !== undefined && order !== 0) return order;
  }
  return compareText(a.release, b.release) || compareText(a.dir, b.dir);
}

/** Stages of one cluster in apply order: by stage order, then name. */
function earlierStageFirst(a: UnitRecord, b: UnitRecord): number {
  return (a.order ?? 0) - (b.order ?? 0) || compareText(a.stage ?? '', b.stage ?? '') || compareText(a.dir, b.dir);
}

/** Objects by identity, each list in the given unit order. */
function groupByIdentity(
  units: UnitRecord[],
  rendered: Map<string, Map<string, string>>,
  order: (a: UnitRecord, b: UnitRecord) => number,
): Map<string, UnitObject[]> {
  const groups = new Map<string, UnitObject[]>();
  for (const record of [...units].sort(order)) {
    for (const object of unitObjects(record, rendered.get(record.dir) ?? new Map())) {
      const list = groups.get(object.key) ?? [];
      list.push(object);
      groups.set(object.key, list);
    }
  }
  return groups;
}

/** A unit that renders an object another unit renders differently: why, and which units are involved. */
export interface ObjectConflict {
  /** The unit to withhold: the newer release, or any stage of the cluster. */
  record: UnitRecord;
  reason: string;
}

/**
 * Release units rendering an object some older kept release renders differently. Each is reported
 * once, against the oldest release rendering that object; withholding them leaves no conflict
 * among the rest (the check is repeated on what remains until none is left).
 */
export function findReleaseConflicts(
  records: UnitRecord[],
  rendered: Map<string, Map<string, string>>,
): ObjectConflict[] {
  const conflicts: ObjectConflict[] = [];
  let remaining = records.filter((record) => record.kind === 'release');
  for (;;) {
    const found = new Map<string, ObjectConflict>();
    for (const objects of groupByIdentity(remaining, rendered, olderReleaseFirst).values()) {
      const [first, ...others] = objects;
      for (const other of others) {
        if (sameYamlValue(first!.value, other.value) || found.has(other.record.dir)) continue;
        found.set(other.record.dir, {
          record: other.record,
          reason: `renders ${describeIdentity(other.identity)} unlike the older release ${first!.record.release} (same API group, kind, namespace and name, different content): one object cannot have two contents, so ${other.record.release} is withheld while both are kept; give the object another name in one release, or drop one of them`,
        });
      }
    }
    if (found.size === 0) return conflicts;
    conflicts.push(...found.values());
    remaining = remaining.filter((record) => !found.has(record.dir));
  }
}

/**
 * Clusters two of whose stages render one object with different content: one conflict per cluster.
 * `onlyClusters` (cluster directories) limits the check to those: a cluster whose stages were all
 * reused from a tree that held them together has none.
 */
export function findStageConflicts(
  records: UnitRecord[],
  rendered: Map<string, Map<string, string>>,
  onlyClusters?: Set<string>,
): ObjectConflict[] {
  const conflicts: ObjectConflict[] = [];
  for (const [cluster, stages] of clusterStages(records)) {
    if (onlyClusters && !onlyClusters.has(cluster)) continue;
    for (const objects of groupByIdentity(stages, rendered, earlierStageFirst).values()) {
      const [first, ...others] = objects;
      const other = others.find((candidate) => !sameYamlValue(first!.value, candidate.value));
      if (!other) continue;
      conflicts.push({
        record: other.record,
        reason: `stages ${first!.record.stage} and ${other.record.stage} both render ${describeIdentity(other.identity)} with different content; one object cannot have two contents: render it in one stage only`,
      });
      break;
    }
  }
  return conflicts;
}

/** The stage units of each cluster that has more than one (one stage cannot collide with itself). */
function clusterStages(records: UnitRecord[]): Map<string, UnitRecord[]> {
  const clusters = new Map<string, UnitRecord[]>();
  for (const record of records) {
    if (record.kind !== 'cluster-stage') continue;
    const key = clusterDir(record.namespace, record.name);
    const stages = clusters.get(key);
    if (stages) stages.push(record);
    else clusters.set(key, [record]);
  }
  for (const [key, stages] of clusters) if (stages.length < 2) clusters.delete(key);
  return clusters;
}

export interface SharedPlacement {
  /** Each unit's files that stay in its directory (the rest live where `record.shared` says). */
  rendered: Map<string, Map<string, string>>;
  /** The records with `files` and `shared` set to match. */
  records: UnitRecord[];
  /** Files of the shared directories, by tree path (objects only; kustomizations come with the tree). */
  sharedFiles: Map<string, string>;
  /** Every shared directory of the tree, also those left empty (the wiring's owner for them exists always). */
  sharedDirs: string[];
  sharedObjects: SharedObjectRecord[];
}

/** What the previous tree recorded, for clusters whose stages were all reused (see placeSharedObjects). */
export interface PreviousPlacement {
  /** Cluster directories with a stage rendered in this run: their placement is computed. */
  renderedClusters: ReadonlySet<string>;
  /** The previous tree's unit records, by directory. */
  before: ReadonlyMap<string, UnitRecord>;
  /** The previous tree's shared-object records. */
  sharedObjects: readonly SharedObjectRecord[];
}

/**
 * Places every object once. `rendered` holds each unit's complete files (as rendered or reused);
 * call it after conflicts are withheld, so objects rendered more than once are alike. Management:
 * an object of more than one release goes to `management/<ns>/shared/` (the namespace of its
 * oldest release), written as that release rendered it. Addons: an object two stages of a cluster
 * render stays in the earlier stage. Every namespace with a release gets its shared directory.
 */
export function placeSharedObjects(
  records: UnitRecord[],
  rendered: Map<string, Map<string, string>>,
  previous?: PreviousPlacement,
): SharedPlacement {
  const placed = new Map<string, Map<string, string>>([...rendered].map(([dir, files]) => [dir, new Map(files)]));
  const shared = new Map<string, Record<string, string>>(); // dir -> unit file -> tree path
  const sharedObjects: SharedObjectRecord[] = [];
  const sharedFiles = new Map<string, string>();
  const moveOut = (object: Pick<UnitObject, 'file'> & { record: Pick<UnitRecord, 'dir'> }, path: string): void => {
    placed.get(object.record.dir)?.delete(object.file);
    shared.set(object.record.dir, { ...shared.get(object.record.dir), [object.file]: path });
  };

  // Management side: per shared directory, the objects it receives, then their file names.
  const releases = records.filter((record) => record.kind === 'release');
  const byDir = new Map<string, UnitObject[][]>();
  for (const objects of groupByIdentity(releases, rendered, olderReleaseFirst).values()) {
    if (new Set(objects.map((object) => object.record.dir)).size < 2) continue;
    const dir = sharedDir([...new Set(objects.map((object) => object.record.namespace))].sort(compareText)[0]!);
    byDir.set(dir, [...(byDir.get(dir) ?? []), objects]);
  }
  for (const [dir, groups] of [...byDir].sort(([a], [b]) => compareText(a, b))) {
    const namespace = dir.split('/')[1]!;
    groups.sort((a, b) => compareText(a[0]!.key, b[0]!.key));
    const names = fileNamesFor(
      groups.map((objects) => objects[0]!.value),
      namespace,
    );
    groups.forEach((objects, index) => {
      const path = `${dir}/${names[index]!}`;
      sharedFiles.set(path, objects[0]!.text);
      for (const object of objects) moveOut(object, path);
      sharedObjects.push({
        path,
        ...objects[0]!.identity,
        version: versionOf(objects[0]!.value),
        renderedBy: [...new Set(objects.map((object) => object.record.release))].sort(compareText),
      });
    });
  }

  // Addon side: within one cluster, the earlier stage keeps the object. Identifying every object of
  // every cluster is most of a one-cluster change to a large fleet, so a cluster whose stages are
  // exactly those of the previous tree, all reused, gets the placement that tree recorded.
  const previousStages = previous ? clusterStages([...previous.before.values()]) : undefined;
  const previousShared = previous ? sharedObjectsByCluster(previous.sharedObjects) : undefined;
  for (const [cluster, stages] of clusterStages(records)) {
    const kept = previous && previousPlacement(cluster, stages, previous, previousStages!, previousShared!, placed);
    if (kept) {
      for (const move of kept.moves) moveOut(move, move.path);
      sharedObjects.push(...kept.objects);
      continue;
    }
    for (const objects of groupByIdentity(stages, rendered, earlierStageFirst).values()) {
      if (objects.length < 2) continue;
      const [first, ...later] = objects;
      const path = `${first!.record.dir}/${first!.file}`;
      for (const object of later) moveOut(object, path);
      sharedObjects.push({
        path,
        ...first!.identity,
        version: versionOf(first!.value),
        renderedBy: objects.map((object) => object.record.dir).sort(compareText),
      });
    }
  }

  const placedRecords = records.map((record) => {
    const { shared: _previous, ...rest } = record;
    const moved = shared.get(record.dir);
    const files = [...(placed.get(record.dir)?.keys() ?? [])].sort(compareText);
    return moved
      ? { ...rest, files, shared: Object.fromEntries(Object.entries(moved).sort(([a], [b]) => compareText(a, b))) }
      : { ...rest, files };
  });
  const sharedDirs = [...new Set(releases.map((record) => sharedDir(record.namespace)).concat([...byDir.keys()]))].sort(
    compareText,
  );
  sharedObjects.sort((a, b) => compareText(a.path, b.path));
  return { rendered: placed, records: placedRecords, sharedFiles, sharedDirs, sharedObjects };
}

/** Addon-side shared-object records by the cluster directory they are in. */
function sharedObjectsByCluster(records: readonly SharedObjectRecord[]): Map<string, SharedObjectRecord[]> {
  const byCluster = new Map<string, SharedObjectRecord[]>();
  for (const record of records) {
    const parts = record.path.split('/');
    if (parts[0] !== 'clusters' || parts.length < 4) continue;
    const cluster = clusterDir(parts[1]!, parts[2]!);
    byCluster.set(cluster, [...(byCluster.get(cluster) ?? []), record]);
  }
  return byCluster;
}

/**
 * The previous tree's placement for one cluster, when it still holds: no stage of the cluster
 * rendered now, its stages are those of the previous tree (same directories, names, order and
 * render digests, so the same complete files), and every file the record moved out is there.
 * Undefined otherwise: the placement is computed.
 */
function previousPlacement(
  cluster: string,
  stages: UnitRecord[],
  previous: PreviousPlacement,
  previousStages: Map<string, UnitRecord[]>,
  previousShared: Map<string, SharedObjectRecord[]>,
  placed: Map<string, Map<string, string>>,
): { moves: { record: { dir: string }; file: string; path: string }[]; objects: SharedObjectRecord[] } | undefined {
  if (previous.renderedClusters.has(cluster)) return undefined;
  const before = previousStages.get(cluster) ?? [];
  if (before.length !== stages.length) return undefined;
  const moves: { record: { dir: string }; file: string; path: string }[] = [];
  for (const stage of stages) {
    const old = previous.before.get(stage.dir);
    if (
      !old ||
      old.kind !== 'cluster-stage' ||
      old.renderDigest !== stage.renderDigest ||
      old.stage !== stage.stage ||
      (old.order ?? 0) !== (stage.order ?? 0)
    )
      return undefined;
    for (const [file, path] of Object.entries(old.shared ?? {})) {
      if (!placed.get(stage.dir)?.has(file) || !path.startsWith(`${cluster}/`)) return undefined;
      moves.push({ record: { dir: stage.dir }, file, path });
    }
  }
  const objects = previousShared.get(cluster) ?? [];
  // Each recorded object must be one the moves produce: its copy in a stage of this cluster.
  if (
    objects.some(
      (object) =>
        !stages.some(
          (stage) =>
            object.path.startsWith(`${stage.dir}/`) &&
            placed.get(stage.dir)?.has(object.path.slice(stage.dir.length + 1)),
        ),
    )
  )
    return undefined;
  if (new Set(moves.map((move) => move.path)).size !== objects.length) return undefined;
  return { moves, objects: objects.map((object) => ({ ...object, renderedBy: [...object.renderedBy] })) };
}

/** Where each management object of a tree lives: identity key -> its directory, with the identity. */
function managementHomes(files: Iterable<[string, string]>): Map<string, { dir: string; identity: ObjectIdentity }> {
  const homes = new Map<string, { dir: string; identity: ObjectIdentity }>();
  for (const [path, text] of files) {
    const parts = path.split('/');
    if (parts[0] !== 'management' || parts.length < 4 || parts.at(-1) === 'kustomization.yaml') continue;
    let identity = quickIdentity(text);
    if (!identity) {
      const object = decodeObject(text);
      if (!object) continue;
      identity = {
        group: apiGroup(object.apiVersion),
        kind: object.kind,
        namespace: object.metadata.namespace ?? '',
        name: object.metadata.name,
      };
    }
    homes.set(identityKey(identity), { dir: parts.slice(0, 3).join('/'), identity });
  }
  return homes;
}

function kubectlDelete(identity: ObjectIdentity): string {
  const resource =
    identity.group === '' ? identity.kind.toLowerCase() : `${identity.kind.toLowerCase()}.${identity.group}`;
  return `kubectl delete ${resource}${identity.namespace === '' ? '' : ` -n ${identity.namespace}`} ${identity.name}`;
}

/**
 * What the move of management objects from the previous tree to this one asks of a person, as
 * notes: an object leaving the tree straight from a shared directory (its owner never prunes, so
 * it stays in the cluster until deleted by hand), and an object moving from a dropped release
 * straight to another release (two owners in one revision with no order between them: the
 * engine may delete it before the new owner applies it; moving through shared/ is safe).
 */
export function handoverNotes(
  previous: Iterable<[string, string]>,
  next: Iterable<[string, string]>,
  keptReleaseDirs: ReadonlySet<string>,
): string[] {
  const before = managementHomes(previous);
  const after = managementHomes(next);
  const notes: string[] = [];
  for (const [key, { dir, identity }] of before) {
    const now = after.get(key);
    const subject = describeIdentity(identity);
    if (dir.endsWith(`/${SHARED}`) && !now) {
      notes.push(
        `${subject} left ${dir}/ with the last release rendering it; shared objects are never pruned by Flux or Argo CD (so that moving between releases never deletes them): once nothing uses it, delete it with \`${kubectlDelete(identity)}\``,
      );
    } else if (
      now &&
      !dir.endsWith(`/${SHARED}`) &&
      !now.dir.endsWith(`/${SHARED}`) &&
      now.dir !== dir &&
      !keptReleaseDirs.has(dir)
    ) {
      notes.push(
        `${subject} moves from the dropped release directory ${dir}/ straight to ${now.dir}/ in one commit: Flux or Argo CD may delete it with the old release before the new one applies it; keeping the old release one render longer (in spec.versions) moves it through the shared directory instead, which is safe`,
      );
    }
  }
  return notes.sort(compareText);
}
