// `npm run generate:health`: writes our kinds' Argo CD health scripts from their one source
// (clusterstack-health-script.ts, reasons from the failure table) and the argocd-cm patch that
// carries them and argoproj.io_Application.lua (hand-written: it only passes a child's health on).
// The outputs are committed so Argo CD users can take them from the repository or the package;
// test/argocd-health.test.ts fails when they are not what this writes.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  ARGOCD_HEALTH_PATCH_FILE,
  ARGOCD_HEALTH_SCRIPTS,
  defaultHealthDir,
  renderArgoHealthPatch,
  type ArgoHealthScript,
} from './argocd-health-patch.js';
import { clusterStackHealthScript, HEALTH_SCRIPT_KINDS, healthScriptName } from './clusterstack-health-script.js';
import { ORC_IMAGE_HEALTH_SCRIPT, orcImageHealthScript } from './node-image-health-script.js';

/** Every generated file of `dir` (name -> text): our three kinds' scripts, the ORC Image script and the argocd-cm patch. */
export function generateHealthFiles(dir = defaultHealthDir()): Map<string, string> {
  const generated = new Map<ArgoHealthScript, string>([
    ...HEALTH_SCRIPT_KINDS.map((spec): [ArgoHealthScript, string] => [
      healthScriptName(spec.kind),
      clusterStackHealthScript(spec),
    ]),
    [ORC_IMAGE_HEALTH_SCRIPT, orcImageHealthScript()],
  ]);
  const scripts = new Map<ArgoHealthScript, string>(
    ARGOCD_HEALTH_SCRIPTS.map((script) => [
      script,
      generated.get(script) ?? readFileSync(path.join(dir, `${script}.lua`), 'utf8'),
    ]),
  );
  const files = new Map<string, string>([...generated].map(([script, text]) => [`${script}.lua`, text]));
  files.set(ARGOCD_HEALTH_PATCH_FILE, renderArgoHealthPatch(scripts));
  return files;
}

/** Writes the generated files that differ from what `dir` holds; returns the names written. */
export function writeHealthFiles(dir = defaultHealthDir()): string[] {
  const written: string[] = [];
  for (const [name, text] of generateHealthFiles(dir)) {
    const file = path.join(dir, name);
    let current: string | undefined;
    try {
      current = readFileSync(file, 'utf8');
    } catch {
      current = undefined;
    }
    if (current === text) continue;
    writeFileSync(file, text);
    written.push(name);
  }
  return written;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const written = writeHealthFiles();
  console.log(written.length === 0 ? 'health scripts: up to date' : `health scripts: wrote ${written.join(', ')}`);
}
