// A local release source shaped like the public openstack/scs stack, built from the fixture charts
// test/fixtures/charts/orc-cluster-class and orc-cluster-addon: every release renders the node image
// as an ORC Image named after the Kubernetes patch version (ubuntu-capi-image-v1.32.5).
//   openstack-scs-1-32-v1, -v2   the same image (same url and hash)
//   openstack-scs-1-32-v3        the same image name with other content (a rebuilt image): a conflict
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { packChart } from './helm-fixtures.js';
import { tempDir } from './cli.js';

const CHARTS = path.resolve(import.meta.dirname, '../fixtures/charts');
export const ORC_PREFIX = 'openstack-scs-1-32';
export const ORC_IMAGE_NAME = 'ubuntu-capi-image-v1.32.5';
const KUBERNETES = 'v1.32.5';
const REBUILT_IMAGE = {
  url: 'https://images.example.test/ubuntu-2404-kube-v1.32.5-rebuilt.qcow2',
  hash: '0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9',
};

/** The release tag of a stack version of the fixture stack (`v2` -> `openstack-scs-1-32-v2`). */
export function orcRelease(version: string): string {
  return `${ORC_PREFIX}-${version}`;
}

async function packWithVersion(source: string, version: string, tgz: string, values?: string): Promise<void> {
  const work = await tempDir('csk-orc-chart-');
  const chart = path.join(work, path.basename(tgz, '.tgz').replace(/-v\d+$/, ''));
  await cp(source, chart, { recursive: true });
  const chartFile = path.join(chart, 'Chart.yaml');
  await writeFile(chartFile, (await readFile(chartFile, 'utf8')).replace(/^version: .*$/m, `version: ${version}`));
  if (values !== undefined) await writeFile(path.join(chart, 'values.yaml'), values);
  await packChart(chart, tgz);
}

/** Writes releases v1, v2 (same image) and v3 (other image content, same name) into a new directory. */
export async function buildOrcReleases(): Promise<string> {
  const dir = await tempDir('csk-orc-releases-');
  const baseValues = await readFile(path.join(CHARTS, 'orc-cluster-class/values.yaml'), 'utf8');
  for (const version of ['v1', 'v2', 'v3']) {
    const release = path.join(dir, orcRelease(version));
    await mkdir(release, { recursive: true });
    await writeFile(
      path.join(release, 'metadata.yaml'),
      `apiVersion: metadata.clusterstack.x-k8s.io/v1alpha1\nversions:\n  clusterStack: ${version}\n  kubernetes: ${KUBERNETES}\n  components:\n    clusterAddon: v1\n    nodeImage: v1\n`,
    );
    const values =
      version === 'v3'
        ? baseValues.replace(/url: .*/, `url: ${REBUILT_IMAGE.url}`).replace(/hash: .*/, `hash: ${REBUILT_IMAGE.hash}`)
        : undefined;
    await packWithVersion(
      path.join(CHARTS, 'orc-cluster-class'),
      version,
      path.join(release, `${ORC_PREFIX}-cluster-class-${version}.tgz`),
      values,
    );
    await packWithVersion(
      path.join(CHARTS, 'orc-cluster-addon'),
      'v1',
      path.join(release, `${ORC_PREFIX}-cluster-addon-v1.tgz`),
    );
    await writeFile(
      path.join(release, 'cluster-addon-values.yaml'),
      'values: |\n  clusterName: {{ .Cluster.metadata.name }}\n',
    );
  }
  return dir;
}

/** A ClusterStack of the fixture stack in namespace `fleet` keeping exactly `versions`. */
export function orcClusterStack(versions: string[]): string {
  return `apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata:
  name: openstack-scs-1-32
  namespace: fleet
spec:
  provider: openstack
  name: scs
  kubernetesVersion: "1.32"
  channel: stable
  autoSubscribe: false
  noProvider: true
  versions: [${versions.join(', ')}]
`;
}
