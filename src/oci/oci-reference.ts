// `oci://registry[:port]/path/to/repo`: where a repository of releases (or an output artifact) lives.
import { InputError } from '../core/problem.js';

export interface OciRepositoryRef {
  /** `host[:port]` as the user wrote it; printable. */
  registry: string;
  /** The host the distribution API is served from (Docker Hub's differs from its name). */
  apiHost: string;
  repository: string;
}

const HOST =
  /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:.]+\])(?::\d{1,5})?$/;
// distribution's repository name grammar.
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$/;

function invalid(message: string): InputError {
  return new InputError([{ message }]);
}

/** Parses `oci://registry/repo` (no tag, no digest, no credentials); throws InputError saying what to change. */
export function parseOciRepository(input: string): OciRepositoryRef {
  if (!input.startsWith('oci://'))
    throw invalid(`${input} is not an OCI reference; write oci://<registry>/<repository>`);
  const rest = input.slice('oci://'.length);
  const slash = rest.indexOf('/');
  const authority = slash === -1 ? rest : rest.slice(0, slash);
  if (authority.includes('@')) {
    // Never echo the input: it carries a password.
    throw invalid(
      `oci://${authority.slice(authority.lastIndexOf('@') + 1)}/...: credentials in the reference are not allowed; set CLUSTERSTACK_REGISTRY_USERNAME and CLUSTERSTACK_REGISTRY_PASSWORD instead`,
    );
  }
  if (slash === -1 || slash === rest.length - 1)
    throw invalid(
      `${input} names no repository; write oci://<registry>/<repository>, e.g. oci://ghcr.io/sovereigncloudstack/cluster-stacks`,
    );
  if (!HOST.test(authority)) throw invalid(`${input}: "${authority}" is not a registry host[:port]`);
  const repository = rest.slice(slash + 1).replace(/\/+$/, '');
  if (repository.includes('@') || /:[^/]*$/.test(repository)) {
    throw invalid(`${input}: give the repository without a tag or digest; each release is a tag in it`);
  }
  for (const component of repository.split('/')) {
    if (!PATH_COMPONENT.test(component)) {
      throw invalid(
        `${input}: "${component}" is not a valid repository path component (lowercase letters, digits and . _ - separators)`,
      );
    }
  }
  return { registry: authority, apiHost: authority === 'docker.io' ? 'registry-1.docker.io' : authority, repository };
}

/** `oci://registry/repo`, the printable form. */
export function formatOciRepository(ref: Pick<OciRepositoryRef, 'registry' | 'repository'>): string {
  return `oci://${ref.registry}/${ref.repository}`;
}

// distribution's tag grammar.
const TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

export interface OciArtifactReference {
  /** `host[:port]` as written; printable. */
  registry: string;
  /** The host serving the distribution API (Docker Hub's differs from its name). */
  apiHost: string;
  repository: string;
  tag: string;
}

/** Parses `oci://registry[:port]/repository:tag`; throws InputError saying what to write instead. */
export function parseOciArtifactReference(input: string): OciArtifactReference {
  const invalidFlag = (message: string): InputError => invalid(`--oci ${message}`);
  const trimmed = input.trim();
  if (!trimmed.startsWith('oci://'))
    throw invalidFlag(`${trimmed} is not an OCI reference; write oci://<registry>/<repository>:<tag>`);
  const rest = trimmed.slice('oci://'.length);
  const slash = rest.indexOf('/');
  // Credentials, a missing repository and a bad host are reported by the repository parser.
  if (slash < 0 || rest.slice(0, slash).includes('@')) return { ...parseOciRepository(trimmed), tag: '' };
  const repositoryPath = rest.slice(slash + 1);
  if (repositoryPath.includes('@'))
    throw invalidFlag(
      `${trimmed} names a digest; an artifact is pushed to a tag: write oci://<registry>/<repository>:<tag>`,
    );
  const colon = repositoryPath.indexOf(':', repositoryPath.lastIndexOf('/') + 1);
  if (colon < 0)
    throw invalidFlag(`${trimmed} names no tag; write oci://<registry>/<repository>:<tag>, e.g. ${trimmed}:latest`);
  const tag = repositoryPath.slice(colon + 1);
  if (!TAG.test(tag)) {
    throw invalidFlag(
      `${trimmed}: "${tag}" is not a valid tag (letters, digits, "_", "." and "-", at most 128, not starting with "." or "-")`,
    );
  }
  const repository = parseOciRepository(`oci://${rest.slice(0, slash)}/${repositoryPath.slice(0, colon)}`);
  return { ...repository, tag };
}
