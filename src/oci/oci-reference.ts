// `oci://registry[:port]/path/to/repo`: where a repository of releases (or an output artifact) lives.
import { InputError } from '../core/problem.js';

export interface OciRepositoryRef {
  /** `host[:port]` as the user wrote it; printable. */
  registry: string;
  /** The host the distribution API is served from (Docker Hub's differs from its name). */
  apiHost: string;
  repository: string;
}

const HOST = /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:.]+\])(?::\d{1,5})?$/;
// distribution's repository name grammar.
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$/;

function invalid(message: string): InputError {
  return new InputError([{ message }]);
}

/** Parses `oci://registry/repo` (no tag, no digest, no credentials); throws InputError saying what to change. */
export function parseOciRepository(input: string): OciRepositoryRef {
  if (!input.startsWith('oci://')) throw invalid(`${input} is not an OCI reference; write oci://<registry>/<repository>`);
  const rest = input.slice('oci://'.length);
  const slash = rest.indexOf('/');
  const authority = slash === -1 ? rest : rest.slice(0, slash);
  if (authority.includes('@')) {
    // Never echo the input: it carries a password.
    throw invalid(`oci://${authority.slice(authority.lastIndexOf('@') + 1)}/...: credentials in the reference are not allowed; set CLUSTERSTACK_REGISTRY_USERNAME and CLUSTERSTACK_REGISTRY_PASSWORD instead`);
  }
  if (slash === -1 || slash === rest.length - 1) throw invalid(`${input} names no repository; write oci://<registry>/<repository>, e.g. oci://ghcr.io/sovereigncloudstack/cluster-stacks`);
  if (!HOST.test(authority)) throw invalid(`${input}: "${authority}" is not a registry host[:port]`);
  const repository = rest.slice(slash + 1).replace(/\/+$/, '');
  if (repository.includes('@') || /:[^/]*$/.test(repository)) {
    throw invalid(`${input}: give the repository without a tag or digest; each release is a tag in it`);
  }
  for (const component of repository.split('/')) {
    if (!PATH_COMPONENT.test(component)) {
      throw invalid(`${input}: "${component}" is not a valid repository path component (lowercase letters, digits and . _ - separators)`);
    }
  }
  return { registry: authority, apiHost: authority === 'docker.io' ? 'registry-1.docker.io' : authority, repository };
}

/** `oci://registry/repo`, the printable form. */
export function formatOciRepository(ref: Pick<OciRepositoryRef, 'registry' | 'repository'>): string {
  return `oci://${ref.registry}/${ref.repository}`;
}
