// Routes a Service to the leading replica alone. The Service has no selector; the replica that
// gains the lease writes the Service's EndpointSlice with its own pod IP, so every call through the
// Service reaches the replica that reconciles (the runtime extension's hooks need the leader's
// render to answer). A standby never writes it; a new leader overwrites it. Knows nothing about what
// the Service serves.
import type { KubeObject } from '../../api/types.js';
import type { ObjectWriter, ResourceKind } from './kube-client.js';

const ENDPOINT_SLICES: ResourceKind = { group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices' };

/** The label kube-proxy matches an EndpointSlice to its Service by. */
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';
const MANAGED_BY = 'clusterstack-gitops';

export interface LeaderEndpoint {
  namespace: string;
  /** The Service (without selector) to route to the leader. */
  service: string;
  podIP: string;
  /** The leader's Pod, named in the endpoint's targetRef. */
  podName?: string;
  /** The container port and its name, as the Service's targetPort names it. */
  port: number;
  portName: string;
}

/** The EndpointSlice naming this replica as the Service's only endpoint. */
function leaderEndpointSlice(endpoint: LeaderEndpoint): KubeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      name: `${endpoint.service}-leader`,
      namespace: endpoint.namespace,
      labels: { [SERVICE_NAME_LABEL]: endpoint.service, [MANAGED_BY_LABEL]: MANAGED_BY },
    },
    addressType: endpoint.podIP.includes(':') ? 'IPv6' : 'IPv4',
    endpoints: [
      {
        addresses: [endpoint.podIP],
        conditions: { ready: true },
        ...(endpoint.podName
          ? { targetRef: { kind: 'Pod', namespace: endpoint.namespace, name: endpoint.podName } }
          : {}),
      },
    ],
    ports: [{ name: endpoint.portName, port: endpoint.port, protocol: 'TCP' }],
  };
}

/** Writes the EndpointSlice (creates it, or replaces its endpoints and ports). */
export async function publishLeaderEndpoint(
  kube: Pick<ObjectWriter, 'get' | 'create' | 'patch'>,
  endpoint: LeaderEndpoint,
): Promise<void> {
  const desired = leaderEndpointSlice(endpoint);
  const name = desired.metadata.name;
  const live = await kube.get(ENDPOINT_SLICES, endpoint.namespace, name);
  if (!live) {
    await kube.create(ENDPOINT_SLICES, endpoint.namespace, desired);
    return;
  }
  // A merge patch replaces lists whole: the endpoints become this replica's alone.
  await kube.patch(ENDPOINT_SLICES, endpoint.namespace, name, {
    metadata: { labels: desired.metadata.labels },
    endpoints: desired['endpoints'],
    ports: desired['ports'],
  });
}
