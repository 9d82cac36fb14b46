// The helms the suites that depend on helm's own behaviour run against: every helm engine
// test/engines/versions.json pins (built into the engine cache by test/install-test-deps.sh). The
// vitest configuration makes one project per helm for those suites (HELM_SUITES), with that helm
// first on PATH, where clusterstack looks first; the other suites run once, on the newest.
import path from 'node:path';
import { builtEngine, engineCacheDir, pinnedEngines } from './real-kube-api/engine-cache.js';

/** The suites whose results depend on which helm renders: run once per helm version. */
export const HELM_SUITES = [
  'test/helm-renderer.test.ts',
  'test/values-template.test.ts',
  'test/render-fidelity.test.ts',
  'test/render-output.test.ts',
  'test/api-versions-render.test.ts',
];

/** One helm of the matrix: the engine's name (`helm3`), version and the directory its binary is in. */
export interface MatrixHelm {
  engine: string;
  version: string;
  binDir: string;
}

/** The pinned helm engines, oldest major first; where each is (or would be) built. */
export function matrixHelms(): MatrixHelm[] {
  return pinnedEngines()
    .filter((engine) => /^helm\d+$/.test(engine.name))
    .map((engine) => ({
      engine: engine.name,
      version: engine.version,
      binDir: path.join(engineCacheDir(), `${engine.name}-${engine.version}`, 'bin'),
    }));
}

/** Throws, saying what to run, when a pinned helm is not built: the suites fail rather than skip. */
export function requireMatrixHelms(): void {
  for (const helm of matrixHelms()) builtEngine(helm.engine);
}
