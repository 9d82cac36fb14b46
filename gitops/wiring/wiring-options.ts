// Where the GitOps engine finds the rendered tree, and the names the wiring uses. Checked once, up
// front: a bad option is a user error with a message saying what to change, and nothing is rendered.
import { InputError, type Problem } from '../../src/core/problem.js';
import { parseOciRepository } from '../../src/oci/oci-reference.js';
import type { ProviderRecord } from '../../src/output/provenance.js';
import type { GitOpsEngine } from './gitops-engine.js';

export type WiringSource =
  | {
      kind: 'git';
      /** Clone URL. Flux accepts http(s):// and ssh:// only; Argo CD also takes scp-like git@host:repo. */
      url: string;
      branch: string;
      /** Subdirectory of the repository holding the rendered tree; '' is the repository root. */
      path: string;
      /** Flux only: name of a Secret (in the wiring namespace) holding the clone credentials. Never the credentials. */
      secretName?: string;
    }
  | {
      kind: 'oci';
      /** `oci://registry/repo`: the artifact's root is the rendered tree's root. */
      url: string;
      tag: string;
      /** Flux only: name of a docker-registry Secret (in the wiring namespace). Never the credentials. */
      secretName?: string;
      /** Flux only: the registry speaks plain HTTP (`--plain-http`), so the OCIRepository is `insecure`. */
      insecure?: boolean;
    };

export interface WiringOptions {
  engine: GitOpsEngine;
  source: WiringSource;
  /** Where the Flux source and Kustomizations, or the Argo CD Applications, live: flux-system / argocd. */
  namespace: string;
  /** Base name, e.g. `clusterstacks`: the source and the root object that applies the wiring itself. */
  name: string;
  /** Argo CD only: the AppProject of every Application. Defaults to `default`. */
  project?: string;
  /** Flux only: the Secret with the age identity for Kustomizations that decrypt SOPS files (default sops-age). */
  sopsSecret?: string;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const OCI_TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
// git check-ref-format, loosely: no spaces, control characters or the characters git forbids.
const BRANCH = /^(?!\/)(?!.*\/\/)(?!.*\.\.)(?!.*@\{)[^\s~^:?*[\\\x00-\x1f\x7f]+(?<![/.])$/;

/** `subdir` without leading or trailing slashes; '' for the root. Undefined when it escapes or is not normalized. */
function normalizePath(subdir: string): string | undefined {
  const trimmed = subdir.replace(/^\/+|\/+$/g, '');
  if (trimmed === '' || trimmed === '.') return '';
  const segments = trimmed.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..' || s.toLowerCase() === '.git') || /[\\\0]/.test(trimmed))
    return undefined;
  return trimmed;
}

/** Credentials inside a URL's authority (`https://user:token@host`). Only a bare ssh user (`ssh://git@host`) is not one. */
function urlCarriesCredentials(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false; // scp-like git@host:repo: a user name, never a secret
  }
  if (parsed.password !== '') return true;
  return parsed.username !== '' && parsed.protocol !== 'ssh:';
}

/** Every problem with the options, for the given engine; empty when they are usable. */
function wiringOptionProblems(options: WiringOptions): Problem[] {
  const problems: Problem[] = [];
  const add = (path: string, message: string): void => {
    problems.push({ path, message });
  };
  if (!DNS_LABEL.test(options.namespace) || options.namespace.length > 63)
    add(
      'namespace',
      `"${options.namespace}" is not a Kubernetes namespace name (lowercase letters, digits and "-", at most 63)`,
    );
  if (!DNS_LABEL.test(options.name) || options.name.length > 63)
    add('name', `"${options.name}" is not a valid object name (lowercase letters, digits and "-", at most 63)`);
  if (options.project !== undefined && options.project.trim() === '')
    add('project', 'give an Argo CD AppProject name or leave it out for "default"');
  if (options.sopsSecret !== undefined && (!DNS_SUBDOMAIN.test(options.sopsSecret) || options.sopsSecret.length > 253))
    add('sopsSecret', `"${options.sopsSecret}" is not a Secret name`);
  const source = options.source;
  if (source.secretName !== undefined && (!DNS_SUBDOMAIN.test(source.secretName) || source.secretName.length > 253)) {
    add('source.secretName', `"${source.secretName}" is not a Secret name`);
  }
  if (source.kind === 'git') {
    if (source.url.trim() === '' || /\s/.test(source.url)) add('source.url', 'give the Git clone URL (no spaces)');
    else if (urlCarriesCredentials(source.url)) {
      add(
        'source.url',
        'the Git URL carries credentials; remove them and let the engine use its own (a Secret named by source.secretName for Flux, a repository credential for Argo CD)',
      );
    } else if (options.engine === 'flux' && !/^(https?|ssh):\/\//.test(source.url)) {
      add(
        'source.url',
        `Flux clones only http://, https:// and ssh:// URLs; write ${/^[^@/]+@[^:]+:/.test(source.url) ? `ssh://${source.url.replace(':', '/')}` : 'one of those'} instead of ${source.url}`,
      );
    }
    if (!BRANCH.test(source.branch)) add('source.branch', `"${source.branch}" is not a Git branch name`);
    if (normalizePath(source.path) === undefined)
      add(
        'source.path',
        `"${source.path}" must be a relative directory inside the repository (no "..", "." or ".git" segments)`,
      );
  } else {
    if (/^oci:\/\/[^/]*@/.test(source.url))
      add(
        'source.url',
        'the OCI URL carries credentials; remove them and name a docker-registry Secret with source.secretName (Flux) or add a repository credential (Argo CD)',
      );
    else {
      try {
        parseOciRepository(source.url);
      } catch (error) {
        add('source.url', error instanceof InputError ? error.message : String(error));
      }
    }
    if (!OCI_TAG.test(source.tag))
      add('source.tag', `"${source.tag}" is not an OCI tag (letters, digits, "_", "." and "-", at most 128)`);
  }
  return problems;
}

/** Throws InputError with every problem the options have. */
export function checkWiringOptions(options: WiringOptions): void {
  const problems = wiringOptionProblems(options);
  if (problems.length > 0) throw new InputError(problems.map((p) => ({ ...p, object: 'GitOps wiring' })));
}

/**
 * The path, inside the repository or artifact, of a directory of the rendered tree (`treeDir`,
 * relative to the tree's root). '' stands for the tree's root itself.
 */
export function sourcePath(source: WiringSource, treeDir: string): string {
  const prefix = source.kind === 'git' ? (normalizePath(source.path) ?? '') : '';
  return [prefix, treeDir].filter((part) => part !== '').join('/');
}

/** What the tree holds beside its units. */
export interface WiringExtras {
  /** management/_cluster-requests/ (ClusterProfiles and Clusters made for ClusterRequests). */
  clusterRequests?: boolean;
  /** Cluster API providers under management/providers/ (core first, then the others, then releases). */
  providers?: ProviderRecord[];
}
