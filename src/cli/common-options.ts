// Options several commands share (release sources, cache, helm) and turning them into objects.
import path from 'node:path';
import { type Config, resolveConfig } from '../config.js';
import { readInputFiles } from '../inputs/read-input-files.js';
import { buildPlan, type Plan } from '../plan/build-plan.js';
import { createSourceOpener, type SourceOpener, type SourceOptions } from '../sources/open-release-source.js';
import type { CliIo } from './cli-io.js';

export const SOURCE_OPTIONS = {
  'release-source': { type: 'string' },
  'cache-dir': { type: 'string' },
  'plain-http': { type: 'boolean', default: false },
  'github-api-url': { type: 'string' },
} as const;

export const SOURCE_HELP = `  --release-source <src>   a directory (one sub-directory per release tag, or an OCI image layout),
                           github:<owner>/<repo>, or oci://<registry>/<repo>
  --cache-dir <dir>        where downloaded releases are cached (CLUSTERSTACK_CACHE_DIR)
  --plain-http             talk plain HTTP to OCI registries (local registries only)
  --github-api-url <url>   GitHub Enterprise API, e.g. https://github.example.com/api/v3 (GITHUB_API_URL)`;

export interface SourceFlags {
  'release-source'?: string | undefined;
  'cache-dir'?: string | undefined;
  'plain-http'?: boolean | undefined;
  'github-api-url'?: string | undefined;
  helm?: string | undefined;
}

export function isRemoteLocation(location: string): boolean {
  return location.startsWith('github:') || location.startsWith('oci://');
}

/** A local source path is resolved against the working directory; remote ones stay as given. */
export function resolveLocation(location: string, cwd: string): string {
  return isRemoteLocation(location) ? location : path.resolve(cwd, location);
}

export function configFromFlags(flags: SourceFlags, io: CliIo): Readonly<Config> {
  return resolveConfig(io.env, {
    ...(flags['cache-dir'] ? { cacheDir: path.resolve(io.cwd, flags['cache-dir']) } : {}),
    ...(flags['github-api-url'] ? { githubApiUrl: flags['github-api-url'] } : {}),
    ...(flags.helm ? { helmBinary: path.resolve(io.cwd, flags.helm) } : {}),
  });
}

export function sourceOpenerFrom(config: Readonly<Config>, flags: SourceFlags, onWarning?: (message: string) => void, onRequest?: SourceOptions['onRequest']): SourceOpener {
  return createSourceOpener({
    ...(onRequest ? { onRequest } : {}),
    cacheDir: config.cacheDir,
    plainHttp: flags['plain-http'] ?? false,
    ...(config.githubToken ? { githubToken: config.githubToken } : {}),
    ...(config.githubApiUrl ? { githubApiUrl: config.githubApiUrl } : {}),
    ...(config.registryUsername && config.registryPassword ? { registryCredentials: { username: config.registryUsername, password: config.registryPassword } } : {}),
    ...(onWarning ? { onWarning } : {}),
  });
}

/**
 * Reads the input files and plans against the release source, as plan, render and cache prune do.
 * A local release source inside an input directory is not read as input.
 */
export async function planFromInputs(inputs: string[], location: string, config: Readonly<Config>, flags: SourceFlags, io: CliIo, onWarning?: (message: string) => void): Promise<Plan> {
  const manifests = await readInputFiles(inputs.map((input) => path.resolve(io.cwd, input)), isRemoteLocation(location) ? [] : [location]);
  return buildPlan({ manifests, defaultSource: location, openSource: sourceOpenerFrom(config, flags, onWarning), workDir: config.cacheDir, ...(onWarning ? { onWarning } : {}) });
}
