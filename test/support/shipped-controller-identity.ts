// The controller's identity as deploy/ ships it, on a real API server: the overlay built with
// `kubectl kustomize` (deploy/flux plus the deploy/runtime-extension component, as docs/controller.md
// tells users to combine them), its CRDs, namespace, ServiceAccount and RBAC applied, and a token
// for that ServiceAccount from the API server's TokenRequest API (what a pod's projected token is;
// a client certificate cannot carry the name: X.509 limits a CN to 64 characters). What the
// controller may do is exactly what the shipped RBAC grants, so a missing rule is a real 403.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeYamlDocuments } from '../../src/yaml/kube-yaml.js';
import type { RealKubeApi } from './real-kube-api/index.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CONTROLLER_NAMESPACE = 'clusterstack-system';
const CONTROLLER_SERVICE_ACCOUNT = 'clusterstack-gitops-controller';
/** Kinds of the overlay not applied here: cert-manager's (not installed) and the Deployment (the test runs the controller itself). */
const NOT_APPLIED = new Set(['Certificate', 'Issuer', 'Deployment']);

/** A kubeconfig (file and text) authenticating as the controller's ServiceAccount. */
export interface ServiceAccountKubeconfig {
  kubeconfig: string;
  kubeconfigFile: string;
}

/** Applies `deploy/<overlay>` (with `components`) except NOT_APPLIED and returns a kubeconfig of the ServiceAccount (token valid 2 h). */
export async function applyShippedControllerIdentity(api: RealKubeApi, overlay = 'flux', components = ['runtime-extension']): Promise<ServiceAccountKubeconfig> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'csk-deploy-'));
  try {
    // kustomize refuses absolute paths to other roots; relative ones outside the overlay are fine.
    const relative = (name: string): string => path.relative(dir, path.join(ROOT, 'deploy', name));
    writeFileSync(path.join(dir, 'kustomization.yaml'), `resources:\n  - ${relative(overlay)}\ncomponents:\n${components.map((component) => `  - ${relative(component)}\n`).join('')}`);
    const built = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
    const applied = decodeYamlDocuments(built).filter((document) => !NOT_APPLIED.has(String((document.value as { kind?: string } | null)?.kind)));
    writeFileSync(path.join(dir, 'applied.yaml'), applied.map((document) => document.text).join('\n---\n'));
    execFileSync('kubectl', ['--kubeconfig', api.admin.kubeconfigFile, 'apply', '--server-side', '--field-manager=clusterstack-test', '-f', path.join(dir, 'applied.yaml')], { encoding: 'utf8', stdio: 'pipe' });
    execFileSync('kubectl', ['--kubeconfig', api.admin.kubeconfigFile, 'wait', '--for=condition=Established', '--timeout=120s', 'crd', '-l', 'app.kubernetes.io/part-of=clusterstack-gitops'], { encoding: 'utf8', stdio: 'pipe' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const response = await api.admin.client.request('POST', `/api/v1/namespaces/${CONTROLLER_NAMESPACE}/serviceaccounts/${CONTROLLER_SERVICE_ACCOUNT}/token`, {
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 7200 } },
  });
  if (response.status !== 201) throw new Error(`TokenRequest for ${CONTROLLER_NAMESPACE}/${CONTROLLER_SERVICE_ACCOUNT}: ${response.status} ${response.text}`);
  const kubeconfig = `${JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: api.name, cluster: { server: api.server, 'certificate-authority-data': Buffer.from(api.pki.ca).toString('base64') } }],
    users: [{ name: CONTROLLER_SERVICE_ACCOUNT, user: { token: response.body.status.token } }],
    contexts: [{ name: api.name, context: { cluster: api.name, user: CONTROLLER_SERVICE_ACCOUNT } }],
    'current-context': api.name,
  }, null, 2)}\n`;
  const kubeconfigFile = path.join(api.dir, `${CONTROLLER_SERVICE_ACCOUNT}.kubeconfig`);
  writeFileSync(kubeconfigFile, kubeconfig, { mode: 0o600 });
  return { kubeconfig, kubeconfigFile };
}
