// The package's TypeScript as the JavaScript tsc emits, file for file (esbuild: no type check, which
// `npm run typecheck` does anyway): for a process that must run our modules under their own names
// (a bundle has none), without compiling them at every start through tsx.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

const SOURCE_DIRS = ['src', 'renderers', 'gitops'];

/** Writes `<outDir>/<dir>/<file>.js` for every .ts file under SOURCE_DIRS of `root` (imports and names unchanged). */
export async function transpileSources(root: string, outDir: string): Promise<void> {
  const entryPoints = SOURCE_DIRS.flatMap((dir) =>
    readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
      .map((file) => path.join(root, dir, file)),
  );
  await build({
    entryPoints,
    outbase: root,
    outdir: outDir,
    bundle: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
  });
}
