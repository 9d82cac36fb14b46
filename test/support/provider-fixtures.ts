// The Cluster API provider fixtures (test/fixtures/providers/<type>/<version>/) and the fake GitHub
// releases the provider tests serve them from, as clusterctl lays them out: metadata.yaml and
// <type>-components.yaml, in kubernetes-sigs/cluster-api (core) or cluster-api-provider-docker.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FakeGitHub } from './fake-github/index.js';

const FIXTURES = path.resolve('test/fixtures/providers');

/** One fixture file, e.g. providerFixture('core', 'v1.8.0', 'metadata.yaml'). */
export function providerFixture(type: string, version: string, file: string): string {
  return readFileSync(path.join(FIXTURES, type, version, file), 'utf8');
}

const REPOSITORIES = { core: 'cluster-api', infrastructure: 'cluster-api-provider-docker' } as const;

/** Serves the fixture release `version` of the core or the docker infrastructure provider. */
export function addProviderRelease(github: FakeGitHub, type: keyof typeof REPOSITORIES, version: string): void {
  github.addRelease('kubernetes-sigs', REPOSITORIES[type], {
    tag: version,
    assets: [
      { name: 'metadata.yaml', content: providerFixture(type, version, 'metadata.yaml') },
      { name: `${type}-components.yaml`, content: providerFixture(type, version, `${type}-components.yaml`) },
    ],
  });
}

/** The docker InfrastructureProvider in capd-system, its `spec` lines after configSecret and fetchConfig. */
export function dockerProvider(spec: string, metadata = ''): string {
  return `apiVersion: operator.cluster.x-k8s.io/v1alpha2
kind: InfrastructureProvider
metadata:
  name: docker
  namespace: capd-system
${metadata}spec:
  configSecret:
    name: docker-variables
  fetchConfig:
    url: https://github.com/kubernetes-sigs/cluster-api-provider-docker/releases
${spec}`;
}

/** The Secret the docker provider's configSecret names, with the variable its components need. */
export const DOCKER_VARIABLES = `apiVersion: v1
kind: Secret
metadata:
  name: docker-variables
  namespace: capd-system
stringData:
  DOCKER_HOST: unix:///var/run/docker.sock
`;

/** The docker provider at `version` and its variables Secret, as one multi-document text. */
export function dockerProviderWithVariables(version: string): string {
  return `${dockerProvider(`  version: ${version}\n`)}---\n${DOCKER_VARIABLES}`;
}
