// Argo CD reaches workload clusters through cluster Secrets. The controller makes one per Cluster
// from CAPI's `<cluster>-kubeconfig` Secret, in the cluster only (never in Git). Pure: the caller
// reads and writes the Secrets; nothing here logs or returns credentials in messages.
import { decodeYamlDocument } from '../../yaml/kube-yaml.js';
import { LABEL_CLUSTER_NAME, LABEL_CLUSTER_NAMESPACE, labelValue, managedLabels } from './owned-objects.js';
import { Failure } from '../../core/failure.js';

export const ARGOCD_SECRET_TYPE_LABEL = 'argocd.argoproj.io/secret-type';
/** CAPI's kubeconfig Secret key. */
export const KUBECONFIG_KEY = 'value';

export interface ClusterCredentials {
  server: string;
  caData?: string;
  certData?: string;
  keyData?: string;
  bearerToken?: string;
  insecure?: boolean;
}

export interface ArgoClusterSecret {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  type: 'Opaque';
  stringData: Record<string, string>;
}

/** Raised for a kubeconfig we cannot use; the message never includes its content. */
export class KubeconfigError extends Failure {
  constructor(message: string) {
    super('internal', message);
    this.name = 'KubeconfigError';
  }
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function named(list: unknown, name: unknown): Record<string, unknown> | undefined {
  if (!Array.isArray(list)) return undefined;
  const entries = list.map(record);
  return (name === undefined ? entries[0] : entries.find((entry) => entry['name'] === name)) ?? undefined;
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The server and credentials of a kubeconfig's current context (or its first one). */
export function credentialsFromKubeconfig(text: string, what: string): ClusterCredentials {
  let document: unknown;
  try {
    document = decodeYamlDocument(text).value;
  } catch {
    throw new KubeconfigError(`${what} does not hold a readable kubeconfig (invalid YAML)`);
  }
  const config = record(document);
  const contextName = str(config['current-context']);
  const context = record(named(config['contexts'], contextName)?.['context']);
  const cluster = record(named(config['clusters'], context['cluster'])?.['cluster']);
  const user = record(named(config['users'], context['user'])?.['user']);
  const server = str(cluster['server']);
  if (!server) throw new KubeconfigError(`${what}: the kubeconfig names no cluster server`);
  const credentials: ClusterCredentials = { server };
  const ca = str(cluster['certificate-authority-data']);
  const cert = str(user['client-certificate-data']);
  const key = str(user['client-key-data']);
  const token = str(user['token']);
  if (ca) credentials.caData = ca;
  if (cert) credentials.certData = cert;
  if (key) credentials.keyData = key;
  if (token) credentials.bearerToken = token;
  if (cluster['insecure-skip-tls-verify'] === true) credentials.insecure = true;
  if (!token && !(cert && key))
    throw new KubeconfigError(`${what}: the kubeconfig has neither a client certificate and key nor a token`);
  return credentials;
}

export function argoClusterSecretName(namespace: string, cluster: string): string {
  return `cluster-${namespace}-${cluster}`;
}

/** The Argo CD cluster Secret for a workload cluster. */
export function desiredArgoClusterSecret(
  cluster: { namespace: string; name: string },
  credentials: ClusterCredentials,
  argoNamespace: string,
): ArgoClusterSecret {
  const tlsClientConfig: Record<string, unknown> = { insecure: credentials.insecure ?? false };
  if (credentials.caData) tlsClientConfig['caData'] = credentials.caData;
  if (credentials.certData) tlsClientConfig['certData'] = credentials.certData;
  if (credentials.keyData) tlsClientConfig['keyData'] = credentials.keyData;
  const config: Record<string, unknown> = { tlsClientConfig };
  if (credentials.bearerToken) config['bearerToken'] = credentials.bearerToken;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: argoClusterSecretName(cluster.namespace, cluster.name),
      namespace: argoNamespace,
      labels: managedLabels({
        [ARGOCD_SECRET_TYPE_LABEL]: 'cluster',
        [LABEL_CLUSTER_NAMESPACE]: cluster.namespace,
        [LABEL_CLUSTER_NAME]: labelValue(cluster.name),
      }),
    },
    type: 'Opaque',
    stringData: {
      name: `${cluster.namespace}-${cluster.name}`,
      server: credentials.server,
      config: JSON.stringify(config),
    },
  };
}

/** Whether a live Secret (base64 `data`) already holds the desired `stringData` and labels. */
export function secretMatches(
  live: { data?: Record<string, string>; metadata?: { labels?: Record<string, string> } },
  desired: ArgoClusterSecret,
): boolean {
  const data = live.data ?? {};
  const keys = Object.keys(desired.stringData);
  if (Object.keys(data).length !== keys.length) return false;
  if (
    keys.some(
      (key) =>
        data[key] === undefined || Buffer.from(data[key]!, 'base64').toString('utf8') !== desired.stringData[key],
    )
  )
    return false;
  return Object.entries(desired.metadata.labels).every(([key, value]) => live.metadata?.labels?.[key] === value);
}
