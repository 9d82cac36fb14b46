// Tiny charts in temp dirs and a real-helm runner for the Helm seam tests.
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import { resolveHelmBinary } from '../../renderers/helm-binary.js';
import { HelmRunner, type HelmRunnerOptions } from '../../renderers/helm-runner.js';

/** A temp dir removed by `cleanup`. */
export async function helmTempDir(prefix = 'helm-test'): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `${prefix}-`));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Writes `files` (relative path → content) under `dir`; returns `dir`. */
export async function writeChart(dir: string, files: Record<string, string>): Promise<string> {
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(dir, name);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, content);
  }
  return dir;
}

/** Packs a chart directory the way `helm package` lays it out: `<dir name>/Chart.yaml` in a .tgz. */
export async function packChart(chartDir: string, tgz: string): Promise<void> {
  await mkdir(path.dirname(tgz), { recursive: true });
  await tar.c({ gzip: true, file: tgz, cwd: path.dirname(chartDir), portable: true }, [path.basename(chartDir)]);
}

/** An executable script standing in for helm where a test needs a process that is slow or prints its environment. */
export async function writeScript(file: string, body: string): Promise<string> {
  await writeFile(file, `#!/bin/sh\n${body}\n`);
  await chmod(file, 0o755);
  return file;
}

/** A runner on the real (bundled or PATH) helm with its own work dir. */
export async function aHelmRunner(
  options: Partial<HelmRunnerOptions> = {},
): Promise<{ runner: HelmRunner; cleanup: () => Promise<void> }> {
  const temp = await helmTempDir('helm-runner');
  const binary = options.binary ?? (await resolveHelmBinary({ pathEnv: process.env.PATH })).path;
  const runner = new HelmRunner({
    pathEnv: process.env.PATH,
    ...options,
    binary,
    workDir: options.workDir ?? temp.dir,
  });
  return { runner, cleanup: temp.cleanup };
}
