// The controller's identity as deploy/ ships it, on a real API server: an overlay (deploy/flux,
// deploy/namespaced, ...) plus components (deploy/runtime-extension, as docs/controller.md tells
// users to combine them) built with `kubectl kustomize`, its CRDs, namespace, ServiceAccount and
// RBAC applied, and a token for that ServiceAccount from the TokenRequest API (what a pod's
// projected token is; a client certificate cannot carry the name: X.509 limits a CN to 64
// characters). What the controller may do is exactly what the shipped RBAC grants, so a missing
// rule is a real 403. kubectl is needed for this.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeYamlDocuments, encodeYaml } from '../../src/yaml/kube-yaml.js';
import { serviceAccountKubeconfig, serviceAccountUserName } from './real-kube-api/index.js';
import type { ServerAccess } from './real-kube-api/service-account.js';

export interface DeployDoc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
}

const ROOT = path.resolve(import.meta.dirname, '../..');
const KUBECTL = process.env.KUBECTL ?? 'kubectl';
const CONTROLLER_NAMESPACE = 'clusterstack-system';
const CONTROLLER_SERVICE_ACCOUNT = 'clusterstack-gitops-controller';
/** Kinds deploy/ ships that are not applied here: cert-manager's (not installed) and the Deployment (the tests run the controller as a local process). */
const NOT_APPLIED = new Set(['Certificate', 'Issuer', 'Deployment']);

/**
 * What `kubectl kustomize` printed per overlay and components: deploy/ does not change during a run,
 * and a file asks for the same overlay several times (spawnSync holds its event loop meanwhile).
 */
const kustomized = new Map<string, string>();

/**
 * The objects `kubectl kustomize deploy/<dir>` builds (`dir` '' for deploy/ itself), with
 * deploy/<component> for each of `components`: new objects at each call, built once per process.
 */
export function kustomizeDeploy(dir: string, components: string[] = []): DeployDoc[] {
  const key = JSON.stringify([dir, components]);
  const yaml = kustomized.get(key) ?? kustomizeOnce(dir, components);
  kustomized.set(key, yaml);
  return decodeYamlDocuments(yaml)
    .map((document) => document.value as DeployDoc | null)
    .filter((doc): doc is DeployDoc => doc !== null);
}

/** `kubectl kustomize`'s output for deploy/<dir> with deploy/<component> for each of `components`. */
function kustomizeOnce(dir: string, components: string[]): string {
  const target = path.join(ROOT, 'deploy', dir);
  let temp: string | undefined;
  let built = target;
  if (components.length > 0) {
    temp = mkdtempSync(path.join(os.tmpdir(), 'csk-deploy-'));
    // kustomize refuses absolute paths to other roots; relative ones outside the overlay are fine.
    const relative = (name: string): string => path.relative(temp!, path.join(ROOT, 'deploy', name));
    writeFileSync(
      path.join(temp, 'kustomization.yaml'),
      `resources:\n  - ${relative(dir)}\ncomponents:\n${components.map((component) => `  - ${relative(component)}\n`).join('')}`,
    );
    built = temp;
  }
  try {
    const run = spawnSync(KUBECTL, ['kustomize', built], { encoding: 'utf8' });
    if (run.status !== 0)
      throw new Error(
        `kubectl kustomize deploy/${dir} failed (kubectl is needed for this test): ${run.stderr || run.error?.message}`,
      );
    return run.stdout;
  } finally {
    if (temp) rmSync(temp, { recursive: true, force: true });
  }
}

/** RBAC kinds without a namespace: a copy of deploy/ renames its own, or it would rebind the first copy's. */
const CLUSTER_RBAC = new Set(['ClusterRole', 'ClusterRoleBinding']);

/**
 * Moves the controller's own namespace (clusterstack-system: its Namespace, ServiceAccount, the
 * Roles there and every binding's subject) to `namespace`, and suffixes its ClusterRoles and
 * ClusterRoleBindings (and the roleRefs naming them) with `-<namespace>`, labelled with
 * `clusterLabels`, so that a second copy of deploy/ makes a second, distinct ServiceAccount on the
 * same server, bound only by that copy's roles, leaving the first copy's as they were.
 */
function inControllerNamespace(
  docs: DeployDoc[],
  namespace: string,
  clusterLabels: Record<string, string>,
): DeployDoc[] {
  const moved = (name: string | undefined): string | undefined => (name === CONTROLLER_NAMESPACE ? namespace : name);
  return docs.map((doc) => ({
    ...doc,
    metadata: {
      ...doc.metadata,
      ...(doc.kind === 'Namespace' ? { name: moved(doc.metadata.name)! } : {}),
      ...(doc.metadata.namespace ? { namespace: moved(doc.metadata.namespace) } : {}),
      ...(CLUSTER_RBAC.has(doc.kind)
        ? { name: `${doc.metadata.name}-${namespace}`, labels: { ...doc.metadata.labels, ...clusterLabels } }
        : {}),
    },
    ...(doc.roleRef?.kind === 'ClusterRole'
      ? { roleRef: { ...doc.roleRef, name: `${doc.roleRef.name}-${namespace}` } }
      : {}),
    ...(doc.subjects
      ? {
          subjects: doc.subjects.map((subject) => ({
            ...subject,
            ...(subject.namespace ? { namespace: moved(subject.namespace) } : {}),
          })),
        }
      : {}),
  }));
}

/** The ServiceAccount's credentials: a kubeconfig file with its token, and the user name the API server (and its audit log) knows it by. */
export interface ShippedIdentity {
  kubeconfigFile: string;
  user: string;
  namespace: string;
}

/**
 * Applies deploy/<overlay> (with `components`) except NOT_APPLIED, as the admin with server-side
 * apply, waits for its CRDs, and returns the ServiceAccount's credentials (token valid 2 h).
 * `namespace` puts the controller's own objects there instead of clusterstack-system, and renames
 * its cluster-wide RBAC (labelled `clusterLabels`) so that it stands beside the first copy.
 */
export async function applyShippedIdentity(
  api: ServerAccess,
  options: { overlay?: string; components?: string[]; namespace?: string; clusterLabels?: Record<string, string> } = {},
): Promise<ShippedIdentity> {
  const namespace = options.namespace ?? CONTROLLER_NAMESPACE;
  const built = kustomizeDeploy(options.overlay ?? '', options.components ?? []).filter(
    (doc) => !NOT_APPLIED.has(doc.kind),
  );
  const docs =
    namespace === CONTROLLER_NAMESPACE ? built : inControllerNamespace(built, namespace, options.clusterLabels ?? {});
  // Namespaces and CRDs first: kubectl applies in the order given.
  const first = (doc: DeployDoc): number => Number(doc.kind === 'Namespace' || doc.kind === 'CustomResourceDefinition');
  docs.sort((a, b) => first(b) - first(a));
  // A stream of documents, not a List: kubectl checks a List against the API server's whole OpenAPI
  // v2 document, which the server builds from every CRD it serves (5 MB, 1.4-1.6 CPU-s, seconds at
  // load, once per change of its CRDs; at load 50 longer than kubectl's 32 s). For single kinds it
  // reads only their group's OpenAPI v3 part, and the server still validates strictly (fieldValidation).
  const input = docs.map((doc) => encodeYaml(doc)).join('---\n');
  const kubectl = (args: string[], stdin?: string): void => {
    const run = spawnSync(KUBECTL, ['--kubeconfig', api.admin.kubeconfigFile, ...args], {
      input: stdin,
      encoding: 'utf8',
    });
    if (run.status !== 0)
      throw new Error(
        `kubectl ${args[0]} of deploy/${options.overlay ?? ''} failed: ${run.stderr || run.error?.message}`,
      );
  };
  kubectl(['apply', '--server-side', '--field-manager=clusterstack-test', '-f', '-'], input);
  if (docs.some((doc) => doc.kind === 'CustomResourceDefinition'))
    kubectl([
      'wait',
      '--for=condition=Established',
      '--timeout=120s',
      'crd',
      '-l',
      'app.kubernetes.io/part-of=clusterstack-gitops',
    ]);
  return shippedIdentityOf(api, namespace);
}

/** The credentials of the controller's ServiceAccount deploy/ made in `namespace` (applied before, e.g. in a server's seed): a fresh token. */
export async function shippedIdentityOf(
  api: ServerAccess,
  namespace: string = CONTROLLER_NAMESPACE,
): Promise<ShippedIdentity> {
  return {
    kubeconfigFile: await serviceAccountKubeconfig(api, namespace, CONTROLLER_SERVICE_ACCOUNT, 7200),
    user: serviceAccountUserName(namespace, CONTROLLER_SERVICE_ACCOUNT),
    namespace,
  };
}
