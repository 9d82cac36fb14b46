// Runs the CLI in-process and captures what it prints.
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import { runCli } from '../../src/cli/run-cli.js';
import { kubernetesVersionOf } from './builders.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runClusterstack(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; isTty?: boolean } = {},
): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      CLUSTERSTACK_CACHE_DIR: path.join(os.tmpdir(), 'csk-test-cache'),
      ...options.env,
    },
    cwd: options.cwd ?? process.cwd(),
    isTty: options.isTty ?? false,
  });
  return { code, stdout, stderr };
}

/** A `render --json` run: its output, and its report (empty when the run failed before printing one). */
export interface RenderRun {
  code: number;
  stdout: string;
  stderr: string;
  report: Record<string, any>;
}

/** Runs `clusterstack render <args> --json` and parses the report it prints. */
export async function renderWithReport(args: string[], env: NodeJS.ProcessEnv = {}): Promise<RenderRun> {
  const result = await runClusterstack(['render', ...args, '--json'], { env });
  let report: Record<string, any> = {};
  try {
    report = JSON.parse(result.stdout);
  } catch {
    // an error run prints no report
  }
  return { ...result, report };
}

export async function tempDir(prefix = 'csk-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix));
}

/** Writes files (relative path -> content) under a new temp dir and returns it. */
export async function writeTree(files: Record<string, string>, root?: string): Promise<string> {
  const dir = root ?? (await tempDir());
  for (const [file, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), content);
  }
  return dir;
}

/** A private copy of the quickstart release source, for tests that damage it. */
export async function copyExampleReleases(): Promise<string> {
  const dir = await tempDir('csk-releases-');
  await cp(path.resolve('examples/quickstart/releases'), dir, { recursive: true });
  return dir;
}

/**
 * A private copy of the quickstart releases as GitHub releases carry them: archives only, so v2's
 * unpacked cluster-class chart is packed as helm would.
 */
export async function copyExampleReleasesAsArchives(): Promise<string> {
  const releases = await copyExampleReleases();
  const v2 = path.join(releases, 'docker-ferrol-1-30-v2');
  await tar.c({ gzip: true, portable: true, cwd: v2, file: path.join(v2, 'docker-ferrol-1-30-cluster-class-v2.tgz') }, [
    'docker-ferrol-1-30-cluster-class-v2',
  ]);
  await rm(path.join(v2, 'docker-ferrol-1-30-cluster-class-v2'), { recursive: true });
  return releases;
}

export const EXAMPLE_MANIFESTS = path.resolve('examples/quickstart/manifests');
export const EXAMPLE_RELEASES = path.resolve('examples/quickstart/releases');

/** Input YAML: the example's ClusterStack on release v1 (edit `versions: [v1]` for others), no provider. */
export const FERROL_STACK_YAML = `apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata: {name: docker-ferrol-1-30, namespace: cluster-stacks}
spec: {provider: docker, name: ferrol, kubernetesVersion: "1.30", noProvider: true, autoSubscribe: false, versions: [v1]}
`;

/** Input YAML: one Cluster on `className`, as a document to append (`---` first). */
export function clusterYaml(name: string, className: string, host = `${name}.example.test`): string {
  return `---
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: {name: ${name}, namespace: cluster-stacks}
spec:
  clusterNetwork: {pods: {cidrBlocks: [10.1.0.0/16]}}
  controlPlaneEndpoint: {host: ${host}, port: 6443}
  topology: {class: ${className}, version: ${kubernetesVersionOf(className)}}
`;
}

/** Every file under `dir`, relative POSIX path -> content (a link to a file reads as that file). */
export async function readTree(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  const walk = async (relative: string): Promise<void> => {
    for (const entry of await readdir(path.join(dir, relative), { withFileTypes: true })) {
      const child = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(child);
      else files[child] = await readFile(path.join(dir, child), 'utf8');
    }
  };
  await walk('');
  return files;
}
