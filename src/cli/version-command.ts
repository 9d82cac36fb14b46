// `clusterstack version` and `clusterstack --version`: this package's version, and the helm a
// render would use, since a bug report needs both.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeHelm, resolveHelmBinary } from '../../renderers/helm-binary.js';
import { resolveConfig } from '../config.js';
import { type CliIo, EXIT_OK } from './cli-io.js';
import { parseCommandLine } from './parse-command-line.js';

const PACKAGE_NAME = 'clusterstack-gitops';

export const VERSION_USAGE = `Usage: clusterstack version [--helm <path>]
       clusterstack --version

Prints the version of clusterstack, of the helm binary a render would use (--helm,
CLUSTERSTACK_HELM, else the first helm on PATH within the supported range, else the bundled
fallback) and of Node.js; warns when that helm is below the supported range.

Options:
  --helm <path>            the helm binary to report on (CLUSTERSTACK_HELM)

Examples:
  # What to paste into a bug report
  clusterstack version`;

/**
 * The version in our package.json, found by walking up from this module: the same answer from
 * dist/src/cli (built), src/cli (tsx), a bundle under node_modules/.cache, or an installed package.
 */
export async function readPackageVersion(moduleUrl: string = import.meta.url): Promise<string | undefined> {
  let dir = path.dirname(fileURLToPath(moduleUrl));
  for (;;) {
    try {
      const manifest = JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8')) as {
        name?: unknown;
        version?: unknown;
      };
      // Another package.json on the way up (a workspace, node_modules) is not ours: keep looking.
      if (manifest.name === PACKAGE_NAME && typeof manifest.version === 'string') return manifest.version;
    } catch {
      // No package.json here, or not JSON: look one directory up.
    }
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** Prints the versions; exits 0 even when helm is missing or old, since the answer is still useful. */
export async function versionCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandLine('version', { args, options: { helm: { type: 'string' } } });
  const version = await readPackageVersion();
  const helm = await helmLine(values.helm, io);
  const lines = [
    `clusterstack ${version ?? '(unknown: its package.json was not found)'}`,
    helm.line,
    `node ${process.version}`,
  ];
  io.stdout(`${lines.join('\n')}\n`);
  if (helm.warning) io.stderr(`warning: ${helm.warning}\n`);
  return EXIT_OK;
}

async function helmLine(flag: string | undefined, io: CliIo): Promise<{ line: string; warning?: string }> {
  try {
    const config = resolveConfig(io.env, flag ? { helmBinary: path.resolve(io.cwd, flag) } : {});
    const helm = await resolveHelmBinary({
      ...(config.helmBinary ? { configured: config.helmBinary } : {}),
      pathEnv: config.pathEnv,
    });
    return { line: describeHelm(helm), ...(helm.warning ? { warning: helm.warning } : {}) };
  } catch (error) {
    return { line: `helm (none usable): ${(error as Error).message}` };
  }
}
