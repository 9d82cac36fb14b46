// Checks every generated wiring must pass whatever the engine: each YAML file one object that
// conforms to the schema facts, kustomization.yaml files that list exactly their directory, and
// nothing that is or carries a credential.
import * as yaml from 'js-yaml';
import type { UnitRecord } from '../../../src/output/provenance.js';
import { checkObject, type KindFacts } from './schema-facts.js';

/** A rendered unit record, as render-output writes it into provenance. */
export function releaseUnit(namespace: string, release: string): UnitRecord {
  return {
    dir: `management/${namespace}/${release}`,
    kind: 'release',
    namespace,
    name: release,
    release,
    inputDigest: 'sha256:in',
    renderDigest: 'sha256:out',
    files: ['clusterclass-x.yaml'],
  };
}

export function stageUnit(
  namespace: string,
  cluster: string,
  release: string,
  stage: string,
  order: number,
): UnitRecord {
  return {
    dir: `clusters/${namespace}/${cluster}/${stage}`,
    kind: 'cluster-stage',
    namespace,
    name: cluster,
    release,
    stage,
    order,
    addonVersion: 'v1',
    inputDigest: 'sha256:in',
    renderDigest: 'sha256:out',
    files: ['daemonset-x.yaml'],
  };
}

/** The single object in a YAML file. */
export const RELEASE = 'docker-ferrol-1-30-v2';
export const OLD_RELEASE = 'docker-ferrol-1-30-v1';

/** Two releases in one namespace; cluster dev/alpha with three stages (two sharing an order), cluster prod/beta with one. */
export function fleet(): UnitRecord[] {
  return [
    releaseUnit('cluster-stacks', OLD_RELEASE),
    releaseUnit('cluster-stacks', RELEASE),
    stageUnit('dev', 'alpha', RELEASE, 'cni', 0),
    stageUnit('dev', 'alpha', RELEASE, 'csi', 1),
    stageUnit('dev', 'alpha', RELEASE, 'metrics-server', 1),
    stageUnit('dev', 'alpha', RELEASE, 'ccm', 2),
    stageUnit('prod', 'beta', OLD_RELEASE, 'cluster-addon', 0),
  ];
}

/** The parsed object at `path` in the wiring, or an error listing what is there. */
export function object(files: Map<string, string>, path: string): Record<string, any> {
  const text = files.get(path);
  if (text === undefined) throw new Error(`no ${path} in [${[...files.keys()].join(', ')}]`);
  return parseObject(text);
}

export function parseObject(text: string): Record<string, any> {
  const documents = yaml.loadAll(text).filter((d) => d !== null && d !== undefined);
  if (documents.length !== 1) throw new Error(`expected one object per file, found ${documents.length}`);
  return documents[0] as Record<string, any>;
}

/** Every object in `files` that is not a kustomization.yaml, by path. */
export function wiringObjects(files: Map<string, string>): Map<string, Record<string, any>> {
  return new Map(
    [...files]
      .filter(([path]) => !path.endsWith('/kustomization.yaml'))
      .map(([path, text]) => [path, parseObject(text)]),
  );
}

/** Schema problems of every file (kustomization.yaml files included), each prefixed with its path. */
export function schemaProblems(files: Map<string, string>, facts: readonly KindFacts[]): string[] {
  return [...files].flatMap(([path, text]) => checkObject(parseObject(text), facts, path));
}

const dirOf = (path: string): string => path.split('/').slice(0, -1).join('/');
const baseOf = (path: string): string => path.split('/').at(-1)!;

/**
 * Kustomize layout problems: every directory holding files has a kustomization.yaml, and each
 * kustomization.yaml lists exactly the other files of its directory plus its subdirectories that
 * are kustomizations themselves (a subdirectory without one is read on its own, by path).
 */
export function kustomizationProblems(files: Map<string, string>): string[] {
  const problems: string[] = [];
  const kustomizationDirs = new Set([...files.keys()].filter((p) => baseOf(p) === 'kustomization.yaml').map(dirOf));
  const expected = new Map<string, Set<string>>();
  const expect = (dir: string, entry: string): void => {
    if (!expected.has(dir)) expected.set(dir, new Set());
    expected.get(dir)!.add(entry);
  };
  for (const path of files.keys()) {
    const dir = dirOf(path);
    if (baseOf(path) !== 'kustomization.yaml') {
      expect(dir, baseOf(path));
      if (!kustomizationDirs.has(dir)) problems.push(`${dir}: holds ${baseOf(path)} but has no kustomization.yaml`);
    }
  }
  for (const dir of kustomizationDirs) {
    const parent = dirOf(dir);
    if (parent !== '') expect(parent, baseOf(dir));
  }
  for (const dir of kustomizationDirs) {
    const listed = (parseObject(files.get(`${dir}/kustomization.yaml`)!).resources ?? []) as string[];
    const want = [...(expected.get(dir) ?? [])].sort();
    if (JSON.stringify([...listed]) !== JSON.stringify([...listed].sort()))
      problems.push(`${dir}/kustomization.yaml: resources are not sorted`);
    if (JSON.stringify([...listed].sort()) !== JSON.stringify(want))
      problems.push(`${dir}/kustomization.yaml lists [${listed.join(', ')}], the directory has [${want.join(', ')}]`);
  }
  return problems;
}

const CREDENTIAL_WORDS =
  /(client-key-data|client-certificate-data|certificate-authority-data|BEGIN [A-Z ]*PRIVATE KEY|password|bearerToken|token:)/i;

/** Anything in the wiring that is a Secret, holds data, or looks like kubeconfig or key material. */
export function credentialProblems(files: Map<string, string>): string[] {
  const problems: string[] = [];
  for (const [path, text] of files) {
    const object = parseObject(text);
    if (object.kind === 'Secret') problems.push(`${path}: is a Secret`);
    if (object.kind === 'Config' || 'clusters' in object || 'users' in object)
      problems.push(`${path}: looks like a kubeconfig`);
    if ('data' in object || 'stringData' in object) problems.push(`${path}: carries data`);
    if (CREDENTIAL_WORDS.test(text)) problems.push(`${path}: mentions credential material`);
    if (/[a-z]+:\/\/[^/\s@]+:[^/\s@]+@/.test(text)) problems.push(`${path}: a URL carries credentials`);
  }
  return problems;
}
