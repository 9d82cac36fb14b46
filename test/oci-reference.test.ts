// The pure parts of the OCI client: references, auth challenges, pagination links, manifest checks.
import { describe, expect, it } from 'vitest';
import { InputError } from '../src/core/problem.js';
import { OciError } from '../src/oci/oci-error.js';
import { buildArtifactManifest } from '../src/oci/artifact-manifest.js';
import { DOCKER_MANIFEST_V2, OCI_INDEX, parseOciManifest } from '../src/oci/oci-manifest.js';
import { parseOciRepository } from '../src/oci/oci-reference.js';
import { parseAuthChallenge } from '../src/oci/www-authenticate.js';
import { nextLink } from '../src/http/link-header.js';

function thrown(action: () => unknown): Error {
  try {
    action();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected an error');
}

describe('parseOciRepository', () => {
  it('splits registry and repository', () => {
    expect(parseOciRepository('oci://ghcr.io/sovereigncloudstack/cluster-stacks')).toEqual({
      registry: 'ghcr.io',
      apiHost: 'ghcr.io',
      repository: 'sovereigncloudstack/cluster-stacks',
    });
    expect(parseOciRepository('oci://127.0.0.1:5000/stacks/')).toMatchObject({
      registry: '127.0.0.1:5000',
      repository: 'stacks',
    });
    expect(parseOciRepository('oci://docker.io/library/stacks').apiHost).toBe('registry-1.docker.io');
  });

  it('refuses credentials in the reference without echoing them', () => {
    const error = thrown(() => parseOciRepository('oci://user:hunter2@ghcr.io/stacks'));
    expect(error).toBeInstanceOf(InputError);
    expect(error.message).toMatch(/credentials in the reference are not allowed; set CLUSTERSTACK_REGISTRY_USERNAME/);
    expect(error.message).not.toContain('hunter2');
  });

  it('refuses a tag, a missing repository and upper-case paths', () => {
    expect(thrown(() => parseOciRepository('oci://ghcr.io/stacks:v1')).message).toMatch(/without a tag or digest/);
    expect(thrown(() => parseOciRepository('oci://ghcr.io')).message).toMatch(/names no repository/);
    expect(thrown(() => parseOciRepository('oci://ghcr.io/Stacks')).message).toMatch(
      /"Stacks" is not a valid repository path component/,
    );
  });
});

describe('parseAuthChallenge', () => {
  it('reads Bearer parameters, including a scope with commas', () => {
    expect(
      parseAuthChallenge(
        'Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push",error="insufficient_scope"',
      ),
    ).toEqual({
      scheme: 'bearer',
      params: {
        realm: 'https://auth.example/token',
        service: 'registry.example',
        scope: 'repository:a/b:pull,push',
        error: 'insufficient_scope',
      },
    });
    expect(parseAuthChallenge('Basic realm="registry"')).toEqual({ scheme: 'basic', params: { realm: 'registry' } });
    expect(parseAuthChallenge(null)).toBeUndefined();
  });
});

describe('nextLink', () => {
  it('finds the rel="next" target', () => {
    expect(nextLink('</v2/a/tags/list?last=x&n=1>; rel="next"')).toBe('/v2/a/tags/list?last=x&n=1');
    expect(nextLink('<https://r/v2/a/tags/list?page=1>; rel="prev", <https://r/v2/a/tags/list?page=3>; rel=next')).toBe(
      'https://r/v2/a/tags/list?page=3',
    );
    expect(nextLink(null)).toBeUndefined();
  });
});

describe('parseOciManifest', () => {
  it('names what a non-OCI manifest is', () => {
    const docker = Buffer.from(
      JSON.stringify({ schemaVersion: 2, mediaType: DOCKER_MANIFEST_V2, config: {}, layers: [] }),
    );
    expect(thrown(() => parseOciManifest(docker, DOCKER_MANIFEST_V2, 'manifest r/a:t')).message).toMatch(
      /manifest r\/a:t is a Docker v2 image manifest/,
    );
    const index = Buffer.from(JSON.stringify({ schemaVersion: 2, manifests: [] }));
    const error = thrown(() => parseOciManifest(index, OCI_INDEX, 'manifest r/a:t'));
    expect(error).toBeInstanceOf(OciError);
    expect(error.message).toMatch(/is an OCI image index/);
  });

  it('reads back what buildArtifactManifest writes, byte-identical for the same input', () => {
    const layer = {
      mediaType: 'application/vnd.oci.image.layer.v1.tar',
      digest: `sha256:${'a'.repeat(64)}`,
      size: 3,
      annotations: { 'org.opencontainers.image.title': 'metadata.yaml' },
    };
    const bytes = buildArtifactManifest('application/vnd.scs.cluster-stacks.v1', [layer], { b: '2', a: '1' });
    expect(
      Buffer.from(buildArtifactManifest('application/vnd.scs.cluster-stacks.v1', [layer], { a: '1', b: '2' })),
    ).toEqual(Buffer.from(bytes));
    expect(parseOciManifest(bytes, undefined, 'm')).toMatchObject({
      artifactType: 'application/vnd.scs.cluster-stacks.v1',
      layers: [layer],
      annotations: { a: '1', b: '2' },
    });
  });
});
