// The helms the suites that depend on helm's own behaviour run against: every helm engine
// test/engines/versions.json pins (built into the engine cache by test/install-test-deps.sh). The
// vitest configuration makes one project per helm for those suites (HELM_SUITES), with that helm
// first on PATH, where clusterstack looks first; the other suites run once, on the newest.
import path from 'node:path';
import { builtEngine, engineCacheDir, pinnedEngines } from './real-kube-api/engine-cache.js';

/**
 * The suites whose results depend on which helm renders: run once per helm version. The other suites
 * that render call helm too, but assert what we do with its output, not what it outputs. Together
 * these take about 10 s a helm, so the matrix costs little.
 */
export const HELM_SUITES = [
  // helm's flags, exit codes, error text and its own timeout handling, run as a process.
  'test/helm-renderer.test.ts',
  // values templates evaluated by helm's Go templates: its sprig functions, lexer errors, int64s.
  'test/values-template.test.ts',
  // that what we write decodes in Kubernetes exactly as helm's own output does.
  'test/render-fidelity.test.ts',
  // bigints and shared objects through helm's output into the tree.
  'test/render-output.test.ts',
  // --api-versions and the Capabilities list helm itself builds in.
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
