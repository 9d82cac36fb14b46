// Real kustomize over generated files: writes them to a temporary directory and runs
// `kubectl kustomize` (kustomize is built into kubectl). Tests using it skip when kubectl is absent.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as yaml from 'js-yaml';

const KUBECTL = process.env.KUBECTL ?? 'kubectl';

/** The objects `kubectl kustomize <dir>` builds from `files` (paths relative to one root). */
export function kustomizeBuild(files: Map<string, string>, dir: string): Record<string, any>[] {
  const root = mkdtempSync(path.join(tmpdir(), 'kustomize-'));
  try {
    for (const [file, text] of files) {
      mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      writeFileSync(path.join(root, file), text);
    }
    const run = spawnSync(KUBECTL, ['kustomize', path.join(root, dir)], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${run.stderr}`);
    return yaml.loadAll(run.stdout).filter((d) => d !== null && d !== undefined) as Record<string, any>[];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
