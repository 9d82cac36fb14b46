// The one place that reads the environment: flags, environment variables and defaults are resolved
// here into a frozen object that everything else receives.
import os from 'node:os';
import path from 'node:path';

export interface Config {
  /** Downloaded releases and extracted charts. */
  cacheDir: string;
  /** The helm binary; undefined means: the bundled one, then PATH. */
  helmBinary?: string;
  /** GitHub token for release listing and pull requests; never logged. */
  githubToken?: string;
  /** GitHub API base URL (GitHub Enterprise: https://host/api/v3). */
  githubApiUrl?: string;
  /** Registry credentials for OCI sources and outputs; never logged. */
  registryUsername?: string;
  registryPassword?: string;
  /** Token for HTTPS Git remotes; never logged or written to .git/config. */
  gitToken?: string;
  gitAuthorName: string;
  gitAuthorEmail: string;
  /** PATH for child processes (helm, git). */
  pathEnv: string;
  /** The environment child processes (git) inherit: HOME, proxies, CA bundles. */
  childEnv: Readonly<Record<string, string>>;
}

export const ENVIRONMENT = {
  cacheDir: 'CLUSTERSTACK_CACHE_DIR',
  helmBinary: 'CLUSTERSTACK_HELM',
  githubToken: 'GITHUB_TOKEN',
  githubApiUrl: 'GITHUB_API_URL',
  registryUsername: 'CLUSTERSTACK_REGISTRY_USERNAME',
  registryPassword: 'CLUSTERSTACK_REGISTRY_PASSWORD',
  gitToken: 'CLUSTERSTACK_GIT_TOKEN',
  gitAuthorName: 'CLUSTERSTACK_GIT_AUTHOR_NAME',
  gitAuthorEmail: 'CLUSTERSTACK_GIT_AUTHOR_EMAIL',
} as const;

export type ConfigFlags = Partial<Pick<Config, 'cacheDir' | 'helmBinary' | 'githubApiUrl'>>;

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

/** Flags win over the environment, which wins over defaults. */
export function resolveConfig(env: NodeJS.ProcessEnv, flags: ConfigFlags = {}): Readonly<Config> {
  const config: Config = {
    cacheDir: path.resolve(flags.cacheDir ?? nonEmpty(env[ENVIRONMENT.cacheDir]) ?? path.join(env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'clusterstack-gitops')),
    gitAuthorName: nonEmpty(env[ENVIRONMENT.gitAuthorName]) ?? 'clusterstack-gitops',
    gitAuthorEmail: nonEmpty(env[ENVIRONMENT.gitAuthorEmail]) ?? 'clusterstack-gitops@localhost',
    pathEnv: env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    childEnv: Object.freeze(Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined))),
  };
  const optional: [keyof Config, string | undefined][] = [
    ['helmBinary', flags.helmBinary ?? nonEmpty(env[ENVIRONMENT.helmBinary])],
    ['githubToken', nonEmpty(env[ENVIRONMENT.githubToken]) ?? nonEmpty(env.GH_TOKEN)],
    ['githubApiUrl', flags.githubApiUrl ?? nonEmpty(env[ENVIRONMENT.githubApiUrl])],
    ['registryUsername', nonEmpty(env[ENVIRONMENT.registryUsername])],
    ['registryPassword', nonEmpty(env[ENVIRONMENT.registryPassword])],
    ['gitToken', nonEmpty(env[ENVIRONMENT.gitToken])],
  ];
  for (const [key, value] of optional) if (value !== undefined) (config as unknown as Record<string, string>)[key] = value;
  return Object.freeze(config);
}
