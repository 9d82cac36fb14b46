// What `kubectl apply -k deploy/<dir>` would install, read with `kubectl kustomize` (kubectl is
// needed for this), and its RBAC applied to a real API server as shipped: the namespace, the
// ServiceAccount, the roles and their bindings. The Deployment is left out: the tests run the
// controller as a local process under that ServiceAccount's token.
import { spawnSync } from 'node:child_process';
import { decodeYamlDocuments } from '../../src/yaml/kube-yaml.js';
import type { RealKubeApi } from './real-kube-api/index.js';

export interface DeployDoc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
}

const KUBECTL = process.env.KUBECTL ?? 'kubectl';
const RBAC_KINDS = new Set(['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);

/** The objects `kubectl kustomize deploy/<dir>` builds (`dir` '' for deploy/ itself). */
export function kustomizeDeploy(dir: string): DeployDoc[] {
  const target = dir ? `deploy/${dir}` : 'deploy';
  const run = spawnSync(KUBECTL, ['kustomize', target], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`kubectl kustomize ${target} failed (kubectl is needed for this test): ${run.stderr || run.error?.message}`);
  return decodeYamlDocuments(run.stdout).map((document) => document.value as DeployDoc | null).filter((doc): doc is DeployDoc => doc !== null);
}

/** Applies the namespace, ServiceAccount, roles and bindings of deploy/<dir> as the admin (server-side apply); returns them. */
export function applyDeployRbac(api: RealKubeApi, dir: string): DeployDoc[] {
  const rbac = kustomizeDeploy(dir).filter((doc) => RBAC_KINDS.has(doc.kind));
  // Namespaces first: kubectl applies in the order given.
  rbac.sort((a, b) => Number(b.kind === 'Namespace') - Number(a.kind === 'Namespace'));
  const input = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: rbac });
  const run = spawnSync(KUBECTL, ['--kubeconfig', api.admin.kubeconfigFile, 'apply', '--server-side', '--field-manager=clusterstack-test', '-f', '-'], { input, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`kubectl apply of deploy/${dir} RBAC failed: ${run.stderr || run.error?.message}`);
  return rbac;
}
