// The argocd-cm patch that installs our Argo CD health checks, built from the .lua files beside this
// module so the committed patch (argocd-cm-health-patch.yaml) and the scripts cannot drift apart.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeObject } from '../../src/api/types.js';
import { serializeObject } from '../../src/render/manifest-objects.js';

export const ARGOCD_HEALTH_PATCH_FILE = 'argocd-cm-health-patch.yaml';

/** The health scripts: argocd-cm key suffix `<group>_<Kind>`, which is also the file name without `.lua`. */
export const ARGOCD_HEALTH_SCRIPTS = [
  'clusterstack.x-k8s.io_ClusterStack',
  'clusterstack.x-k8s.io_ClusterStackRelease',
  'clusterstack.x-k8s.io_ClusterAddon',
  // Restores Application health (gone since Argo CD 1.8) so the generated per-cluster app of apps
  // waits for each stage's Application before syncing the next wave.
  'argoproj.io_Application',
] as const;

export type ArgoHealthScript = (typeof ARGOCD_HEALTH_SCRIPTS)[number];

const HEADER = `# Argo CD health checks for clusterstack-gitops, as a patch of the argocd-cm ConfigMap.
# Generated from gitops/health/*.lua by renderArgoHealthPatch(); edit the .lua files, not this one.
# Add it to the kustomization that installs Argo CD (the target makes it match in any namespace):
#   patches:
#     - path: argocd-cm-health-patch.yaml
#       target: {kind: ConfigMap, name: argocd-cm}
# argoproj.io_Application restores Application health (dropped in Argo CD 1.8): without it the
# sync waves of the generated per-cluster app of apps do not wait for one addon stage before the next.
`;

/** The argocd-cm key for a script. */
export function argoHealthKey(script: ArgoHealthScript): string {
  return `resource.customizations.health.${script}`;
}

/** This module's directory in the source tree: the .lua files are not compiled into dist/. */
export function defaultHealthDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const fromDist = path.resolve(here, '../../../gitops/health');
  return existsSync(path.join(here, `${ARGOCD_HEALTH_SCRIPTS[0]}.lua`)) ? here : fromDist;
}

/** The health scripts' text, read from `dir`. */
export function readArgoHealthScripts(dir = defaultHealthDir()): Map<ArgoHealthScript, string> {
  return new Map(ARGOCD_HEALTH_SCRIPTS.map((script) => [script, readFileSync(path.join(dir, `${script}.lua`), 'utf8')]));
}

/** The patch YAML for the given scripts (read from the .lua files by default); same scripts, same bytes. */
export function renderArgoHealthPatch(scripts: ReadonlyMap<ArgoHealthScript, string> = readArgoHealthScripts()): string {
  const data: Record<string, string> = {};
  for (const script of ARGOCD_HEALTH_SCRIPTS) {
    const text = scripts.get(script);
    if (text === undefined) throw new Error(`internal error: no Argo CD health script ${script}`);
    data[argoHealthKey(script)] = text.endsWith('\n') ? text : `${text}\n`;
  }
  // No namespace: it comes from the Argo CD install (with `target`, the patch matches any namespace).
  const patch = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'argocd-cm', labels: { 'app.kubernetes.io/name': 'argocd-cm', 'app.kubernetes.io/part-of': 'argocd' } },
    data,
  } as unknown as KubeObject;
  return `${HEADER}${serializeObject(patch)}`;
}
