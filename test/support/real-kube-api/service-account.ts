// A ServiceAccount's own credentials on a real API server: a token from the TokenRequest API (as
// the kubelet mounts one into a pod) in a kubeconfig, so a process runs as that ServiceAccount and
// RBAC decides what it may do; and the API server's audit log, to see what it was refused.
import { closeSync, fstatSync, openSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { KubeClient } from './kube-client.js';
import type { RealKubeApi } from './real-kube-api.js';

/** `system:serviceaccount:<namespace>:<name>`, as the API server names the ServiceAccount's user. */
export function serviceAccountUserName(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/** What a ServiceAccount's kubeconfig is made from: a server started here, or one leased from the run's broker. */
export type ServerAccess = Pick<RealKubeApi, 'name' | 'server' | 'dir'> & {
  pki: Pick<RealKubeApi['pki'], 'ca'>;
  admin: Pick<RealKubeApi['admin'], 'client' | 'kubeconfigFile'>;
};

/** Requests a token for ServiceAccount `namespace/name` (it must exist) and writes a kubeconfig with it; returns the file. */
export async function serviceAccountKubeconfig(
  api: ServerAccess,
  namespace: string,
  name: string,
  expirationSeconds = 3600,
): Promise<string> {
  const response = await api.admin.client.request(
    'POST',
    `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
    {
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds } },
    },
  );
  if (response.status !== 201 && response.status !== 200)
    throw new Error(
      `TokenRequest for ServiceAccount ${namespace}/${name}: ${response.status} ${response.body?.message ?? response.text}`,
    );
  const token = response.body.status.token as string;
  const user = serviceAccountUserName(namespace, name);
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: api.name,
        cluster: { server: api.server, 'certificate-authority-data': Buffer.from(api.pki.ca).toString('base64') },
      },
    ],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: api.name, context: { cluster: api.name, user, namespace } }],
    'current-context': api.name,
  };
  const file = path.join(api.dir, `sa-${namespace}-${name}.kubeconfig`);
  writeFileSync(file, `${JSON.stringify(kubeconfig, null, 2)}\n`, { mode: 0o600 });
  return file;
}

/** One audit event (audit.k8s.io/v1 Event), the fields the tests read. */
export interface AuditEvent {
  verb: string;
  requestURI: string;
  userAgent?: string;
  user: { username: string; groups?: string[] };
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string; apiGroup?: string };
  responseStatus?: { code?: number; message?: string };
  stage: string;
  /** RFC 3339 with microseconds. */
  requestReceivedTimestamp: string;
}

/**
 * The audit log's events so far (the server must run with `auditLog: true`); from `fromByte` (an
 * earlier size of the log) on, the events written since: a shared server's log holds every earlier
 * file's requests too, and reading them all at each look grows with the run.
 */
export function auditEvents(api: Pick<RealKubeApi, 'name' | 'auditLogFile'>, fromByte = 0): AuditEvent[] {
  if (!api.auditLogFile)
    throw new Error(`API server ${api.name} runs without an audit log: start it with { auditLog: true }`);
  let text: string;
  if (fromByte === 0) text = readFileSync(api.auditLogFile, 'utf8');
  else {
    // From the byte before: the first line is dropped up to its newline, whole or (when the size
    // was taken mid-write) the end of a line written before.
    const file = openSync(api.auditLogFile, 'r');
    try {
      const buffer = Buffer.alloc(Math.max(0, fstatSync(file).size - fromByte + 1));
      const read = readSync(file, buffer, 0, buffer.length, fromByte - 1);
      const tail = buffer.subarray(0, read).toString('utf8');
      text = tail.slice(tail.indexOf('\n') + 1);
    } finally {
      closeSync(file);
    }
  }
  // Up to the last newline: the API server may be writing the line after it right now.
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as AuditEvent);
}

/**
 * Our controller's identity on the wire, from its audit events: the User-Agents its requests carried,
 * how many writes it made, and those writes (described) not under `fieldManager`.
 */
export function wireIdentity(
  events: AuditEvent[],
  server: string,
  fieldManager: string,
): { userAgents: (string | undefined)[]; writes: number; foreignWrites: string[] } {
  const writes = events.filter((event) => ['create', 'update', 'patch'].includes(event.verb));
  return {
    userAgents: [...new Set(events.map((event) => event.userAgent))],
    writes: writes.length,
    foreignWrites: writes
      .filter((event) => new URL(event.requestURI, server).searchParams.get('fieldManager') !== fieldManager)
      .map(describeAuditEvent),
  };
}

/** `verb group/resource[/subresource] (namespace/name): code message` of an audit event, for failure messages. */
export function describeAuditEvent(event: AuditEvent): string {
  const ref = event.objectRef ?? {};
  const what = `${ref.apiGroup ? `${ref.apiGroup}/` : ''}${ref.resource ?? event.requestURI}${ref.subresource ? `/${ref.subresource}` : ''}`;
  const where = [ref.namespace, ref.name].filter(Boolean).join('/');
  return `${event.verb} ${what}${where ? ` (${where})` : ''}: ${event.responseStatus?.code ?? '?'} ${event.responseStatus?.message ?? ''}`.trim();
}

/** Whether the server now grants `user` the request of `event` (a SubjectAccessReview asked as `admin`). */
export async function grantedNow(
  admin: KubeClient,
  user: AuditEvent['user'],
  event: Pick<AuditEvent, 'verb' | 'objectRef'>,
): Promise<boolean> {
  const ref = event.objectRef ?? {};
  const review = await admin.request('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: user.username,
        groups: user.groups ?? [],
        resourceAttributes: {
          verb: event.verb,
          group: ref.apiGroup ?? '',
          resource: ref.resource,
          subresource: ref.subresource ?? '',
          namespace: ref.namespace ?? '',
          name: ref.name ?? '',
        },
      },
    },
  });
  return review.status === 201 && review.body.status?.allowed === true;
}
