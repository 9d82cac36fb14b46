// Releases as OCI artifacts against real registries (Debian docker-registry: anonymous, htpasswd and
// token auth), read back with skopeo, and mirrored into an OCI layout with skopeo copy.
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OciError } from '../src/oci/oci-error.js';
import {
  DOCKER_MANIFEST_V2,
  EMPTY_CONFIG,
  OCI_FILE_LAYER,
  OCI_MANIFEST,
  TITLE_ANNOTATION,
} from '../src/oci/oci-manifest.js';
import { buildArtifactManifest } from '../src/oci/artifact-manifest.js';
import { RegistryClient } from '../src/oci/registry-client.js';
import { CLUSTER_STACK_ARTIFACT_TYPE } from '../src/oci/release-artifact.js';
import { fileDigest } from '../src/release/content-digest.js';
import type { ReleaseSourceError } from '../src/release/release-source.js';
import { LocalReleaseSource } from '../src/sources/local-release-source.js';
import { OciLayoutSource } from '../src/sources/oci-layout-source.js';
import { OciReleaseSource, type OciReleaseSourceOptions } from '../src/sources/oci-release-source.js';
import { createSourceOpener } from '../src/sources/open-release-source.js';
import { ReleaseCache } from '../src/sources/release-cache.js';
import { defaultRemoteFetch } from '../src/http/remote-fetch.js';
import { freePort, startCorruptingProxy, startRegistry, type TestRegistry } from './support/registry/index.js';
import { pushArtifact, pushReleaseDirectory } from './support/registry/push-artifact.js';

const run = promisify(execFile);
const RELEASES = path.resolve('examples/quickstart/releases');
const V1 = 'docker-ferrol-1-30-v1';
const V3 = 'docker-ferrol-1-30-v3';
const REPO = 'scs/cluster-stacks';
const FAST_RETRY = { attempts: 3, baseDelayMs: 1, maxDelayMs: 1 };
const noSleep = async (): Promise<void> => {};

/** The sources' default fetch, counting its calls: how many requests a source made. */
function countingFetch(): { fetch: typeof defaultRemoteFetch; calls: () => number } {
  let calls = 0;
  const fetch: typeof defaultRemoteFetch = (...args) => {
    calls += 1;
    return defaultRemoteFetch(...args);
  };
  return { fetch, calls: () => calls };
}

let anonymous: TestRegistry;
let basic: TestRegistry;
let token: TestRegistry;
let scratch: string;

beforeAll(async () => {
  [anonymous, basic, token] = await Promise.all([
    startRegistry(),
    startRegistry({ auth: 'basic' }),
    startRegistry({ auth: 'token' }),
  ]);
  scratch = await mkdtemp(path.join(os.tmpdir(), 'oci-release-source-'));
  const client = new RegistryClient({ registry: anonymous.host, plainHttp: true });
  await pushReleaseDirectory(client, REPO, V1, path.join(RELEASES, V1));
  await pushReleaseDirectory(client, REPO, V3, path.join(RELEASES, V3));
  await pushReleaseDirectory(client, REPO, 'latest', path.join(RELEASES, V3));
});

afterAll(async () => {
  await Promise.all([anonymous?.stop(), basic?.stop(), token?.stop()]);
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

let caches = 0;
function newCache(): ReleaseCache {
  return new ReleaseCache(path.join(scratch, `cache-${++caches}`));
}

function sourceFor(registry: { host: string }, options: Partial<OciReleaseSourceOptions> = {}): OciReleaseSource {
  return new OciReleaseSource({
    reference: `oci://${registry.host}/${REPO}`,
    plainHttp: true,
    cache: newCache(),
    sleep: noSleep,
    retry: FAST_RETRY,
    ...options,
  });
}

async function rejection(promise: Promise<unknown>): Promise<ReleaseSourceError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(OciError);
  return error as ReleaseSourceError;
}

async function localDigest(tag: string): Promise<string> {
  return (await new LocalReleaseSource(RELEASES).fetch(tag)).digest;
}

/** Cache entries and leftovers: a failed fetch must leave neither. */
async function cacheContents(cache: ReleaseCache): Promise<{ entries: number; temp: string[] }> {
  const temp = await readdir(path.join(cache.root, 'tmp')).catch(() => []);
  return { entries: (await cache.entries()).length, temp };
}

describe('pushArtifact', () => {
  it('pushes a release in the published layout, as skopeo reads it back', async () => {
    const { stdout } = await run('skopeo', [
      'inspect',
      '--raw',
      '--tls-verify=false',
      `docker://${anonymous.host}/${REPO}:${V1}`,
    ]);
    const manifest = JSON.parse(stdout) as {
      mediaType: string;
      artifactType: string;
      config: { mediaType: string; digest: string };
      layers: { mediaType: string; digest: string; size: number; annotations: Record<string, string> }[];
    };
    expect(manifest.mediaType).toBe(OCI_MANIFEST);
    expect(manifest.artifactType).toBe(CLUSTER_STACK_ARTIFACT_TYPE);
    expect(manifest.config).toMatchObject({ mediaType: EMPTY_CONFIG.mediaType, digest: EMPTY_CONFIG.digest });
    const files = (await readdir(path.join(RELEASES, V1))).sort();
    expect(manifest.layers.map((layer) => layer.annotations[TITLE_ANNOTATION])).toEqual(files);
    for (const layer of manifest.layers) {
      expect(layer.mediaType).toBe(OCI_FILE_LAYER);
      expect(layer.digest).toBe(await fileDigest(path.join(RELEASES, V1, layer.annotations[TITLE_ANNOTATION]!)));
    }
  });

  it('refuses a release directory holding a sub-directory before pushing anything', async () => {
    const client = new RegistryClient({ registry: anonymous.host, plainHttp: true });
    const error = await rejection(
      pushReleaseDirectory(client, REPO, 'docker-ferrol-1-30-v2', path.join(RELEASES, 'docker-ferrol-1-30-v2')),
    );
    expect(error.message).toMatch(/docker-ferrol-1-30-cluster-class-v2 is not a regular file/);
    expect(await client.listTags(REPO)).not.toContain('docker-ferrol-1-30-v2');
  });
});

describe('OciReleaseSource', () => {
  it('lists the tags that are releases and skips the others with the reason', async () => {
    const listing = await sourceFor(anonymous).list();
    expect(listing.releases.map((release) => release.tag)).toEqual([V1, V3]);
    expect(listing.skipped).toEqual([
      { name: 'latest', reason: expect.stringMatching(/not a cluster stack release tag/) },
    ]);
  });

  it('follows Link pagination of the tag list', async () => {
    const client = new RegistryClient({ registry: anonymous.host, plainHttp: true, tagPageSize: 1 });
    expect((await client.listTags(REPO)).sort()).toEqual([V1, V3, 'latest'].sort());
  });

  it('fetches a release with the digest of the directory it was pushed from, then serves it from the cache', async () => {
    const counting = countingFetch();
    const source = sourceFor(anonymous, { fetch: counting.fetch });
    expect(source.location).toBe(`oci://${anonymous.host}/${REPO}`);
    const release = await source.fetch(V1);
    expect(release.digest).toBe(await localDigest(V1));
    expect(await readFile(path.join(release.dir, 'metadata.yaml'), 'utf8')).toBe(
      await readFile(path.join(RELEASES, V1, 'metadata.yaml'), 'utf8'),
    );
    const requests = counting.calls();
    expect(await source.fetch(V1)).toEqual(release);
    expect(counting.calls()).toBe(requests);
  });

  it('reports a missing tag and a missing repository as not-found', async () => {
    const missingTag = await rejection(sourceFor(anonymous).fetch('docker-ferrol-1-30-v9'));
    expect(missingTag.kind).toBe('not-found');
    expect(missingTag.message).toMatch(/tag docker-ferrol-1-30-v9 not found/);
    const missingRepo = await rejection(
      new OciReleaseSource({
        reference: `oci://${anonymous.host}/nobody/here`,
        plainHttp: true,
        cache: newCache(),
      }).list(),
    );
    expect(missingRepo.kind).toBe('not-found');
    expect(missingRepo.message).toMatch(/repository nobody\/here does not exist/);
  });

  it('refuses a Docker image with a clear message and stores nothing', async () => {
    const client = new RegistryClient({ registry: anonymous.host, plainHttp: true });
    const config = await client.pushBlob(
      'docker/image',
      Buffer.from('{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}'),
    );
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: DOCKER_MANIFEST_V2,
        config: { mediaType: 'application/vnd.docker.container.image.v1+json', ...config },
        layers: [],
      }),
    );
    await client.pushManifest('docker/image', V1, manifest, DOCKER_MANIFEST_V2);
    const cache = newCache();
    const error = await rejection(
      new OciReleaseSource({ reference: `oci://${anonymous.host}/docker/image`, plainHttp: true, cache }).fetch(V1),
    );
    expect(error.kind).toBe('invalid-release');
    expect(error.message).toMatch(/is a Docker v2 image manifest .*not an OCI artifact manifest/);
    expect(await cacheContents(cache)).toEqual({ entries: 0, temp: [] });
  });

  it('refuses artifacts of another type and layers whose title is not a plain file name', async () => {
    const client = new RegistryClient({ registry: anonymous.host, plainHttp: true });
    await pushArtifact(client, {
      repository: 'other/artifacts',
      tag: V1,
      artifactType: 'application/vnd.example.thing',
      files: [{ name: 'metadata.yaml', content: Buffer.from('x') }],
    });
    const blob = await client.pushBlob('other/artifacts', Buffer.from('apiVersion: x'));
    await client.pushBlob('other/artifacts', Buffer.from(EMPTY_CONFIG.data, 'base64'));
    const escaping = buildArtifactManifest(CLUSTER_STACK_ARTIFACT_TYPE, [
      { mediaType: OCI_FILE_LAYER, ...blob, annotations: { [TITLE_ANNOTATION]: '../metadata.yaml' } },
    ]);
    await client.pushManifest('other/artifacts', V3, escaping, OCI_MANIFEST);
    const cache = newCache();
    const source = new OciReleaseSource({
      reference: `oci://${anonymous.host}/other/artifacts`,
      plainHttp: true,
      cache,
    });
    const wrongType = await rejection(source.fetch(V1));
    expect(wrongType.kind).toBe('invalid-release');
    expect(wrongType.message).toMatch(/artifact of type application\/vnd\.example\.thing, not a cluster stack release/);
    const escape = await rejection(source.fetch(V3));
    expect(escape.message).toMatch(/titled "\.\.\/metadata\.yaml"; a release file must be a plain file name/);
    expect(await cacheContents(cache)).toEqual({ entries: 0, temp: [] });
  });

  it('accepts the artifact type in config.mediaType, where older artifacts put it', async () => {
    const client = new RegistryClient({ registry: anonymous.host, plainHttp: true });
    const metadata = await readFile(path.join(RELEASES, V1, 'metadata.yaml'));
    const layer = await client.pushBlob('legacy/stacks', metadata);
    const config = await client.pushBlob('legacy/stacks', Buffer.from('{}'));
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_MANIFEST,
        config: { mediaType: CLUSTER_STACK_ARTIFACT_TYPE, ...config },
        layers: [{ mediaType: OCI_FILE_LAYER, ...layer, annotations: { [TITLE_ANNOTATION]: 'metadata.yaml' } }],
      }),
    );
    await client.pushManifest('legacy/stacks', V1, manifest, OCI_MANIFEST);
    const release = await new OciReleaseSource({
      reference: `oci://${anonymous.host}/legacy/stacks`,
      plainHttp: true,
      cache: newCache(),
    }).fetch(V1);
    expect(await readdir(release.dir)).toEqual(['metadata.yaml']);
  });

  it('discards a layer whose content does not match its digest and caches nothing', async () => {
    const proxy = await startCorruptingProxy(anonymous.host, (blobPath) => blobPath.includes('/blobs/'));
    try {
      const cache = newCache();
      const error = await rejection(sourceFor(proxy, { cache }).fetch(V1));
      expect(error.kind).toBe('invalid-release');
      expect(error.message).toMatch(
        /file cluster-addon-values\.yaml: blob sha256:\w+ of .* arrived as sha256:\w+ .*altered it/,
      );
      expect(proxy.corrupted.length).toBe(1);
      expect(await cacheContents(cache)).toEqual({ entries: 0, temp: [] });
    } finally {
      await proxy.close();
    }
  });

  it('refuses to talk HTTPS to a plain-HTTP registry and says to pass --plain-http, without retrying', async () => {
    const counting = countingFetch();
    const error = await rejection(sourceFor(anonymous, { plainHttp: false, fetch: counting.fetch }).list());
    expect(error.kind).toBe('unavailable');
    expect(error.message).toMatch(/does not speak HTTPS .*pass --plain-http/);
    expect(counting.calls()).toBe(1);
  });

  it('gives up with unavailable after backing off when the registry is down', async () => {
    let sleeps = 0;
    const sleep = async (): Promise<void> => void (sleeps += 1);
    const error = await rejection(sourceFor({ host: `127.0.0.1:${await freePort()}` }, { sleep }).list());
    expect(error.kind).toBe('unavailable');
    expect(error.message).toMatch(/unreachable \(ECONNREFUSED\).*gave up after 3 attempts/);
    expect(sleeps).toBe(2);
  });
});

describe.each([
  ['basic', () => basic],
  ['token', () => token],
] as const)('a registry with %s auth', (mode, registryOf) => {
  beforeAll(async () => {
    const registry = registryOf();
    const client = new RegistryClient({
      registry: registry.host,
      plainHttp: true,
      credentials: { username: registry.username, password: registry.password },
    });
    await pushReleaseDirectory(client, REPO, V1, path.join(RELEASES, V1));
  });

  it('lists and fetches with the right credentials', async () => {
    const registry = registryOf();
    const source = sourceFor(registry, { credentials: { username: registry.username, password: registry.password } });
    expect((await source.list()).releases.map((release) => release.tag)).toEqual([V1]);
    expect((await source.fetch(V1)).digest).toBe(await localDigest(V1));
    if (mode === 'token') {
      expect(registry.tokenIssuer?.requestedScopes).toContain(`repository:${REPO}:pull,push`);
      expect(registry.tokenIssuer?.requestedScopes).toContain(`repository:${REPO}:pull`);
    }
  });

  it('refuses a wrong password with an auth error that does not reveal it', async () => {
    const registry = registryOf();
    const wrong = `${registry.password}-wrong`;
    const error = await rejection(
      sourceFor(registry, { credentials: { username: registry.username, password: wrong } }).fetch(V1),
    );
    expect(error.kind).toBe('auth');
    expect(error.message).toMatch(new RegExp(`registry ${registry.host} refused the credentials to read ${REPO}`));
    expect(error.message).not.toContain(registry.password);
  });

  it('asks for credentials when none are given', async () => {
    const error = await rejection(sourceFor(registryOf()).list());
    expect(error.kind).toBe('auth');
    expect(error.message).toMatch(/requires credentials to read .*CLUSTERSTACK_REGISTRY_USERNAME/);
  });
});

describe('OciLayoutSource', () => {
  let layout: string;

  beforeAll(async () => {
    layout = path.join(scratch, 'mirror');
    for (const tag of [V1, V3]) {
      await run('skopeo', [
        '--insecure-policy',
        'copy',
        '--src-tls-verify=false',
        `docker://${anonymous.host}/${REPO}:${tag}`,
        `oci:${layout}:${tag}`,
      ]);
    }
  });

  it('reads the releases skopeo copied into an OCI layout, verified', async () => {
    const source = new OciLayoutSource(layout, { cache: newCache() });
    expect((await source.list()).releases.map((release) => release.tag)).toEqual([V1, V3]);
    expect((await source.fetch(V3)).digest).toBe(await localDigest(V3));
    expect((await rejection(source.fetch('docker-ferrol-1-30-v9'))).kind).toBe('not-found');
  });

  it('is what the opener picks for a directory with an oci-layout file', async () => {
    const open = createSourceOpener({ cacheDir: path.join(scratch, 'opener-cache'), plainHttp: true });
    // The layout reader loads on first use too: the opened source lists and fetches from the layout.
    const fromLayout = open(layout);
    expect(fromLayout.location).toBe(layout);
    expect((await fromLayout.list()).releases.map((release) => release.tag)).toEqual([V1, V3]);
    expect((await fromLayout.fetch(V3)).digest).toBe(await localDigest(V3));
    expect(open(RELEASES)).toBeInstanceOf(LocalReleaseSource);
    // The registry client loads on first use: a stand-in named as OciReleaseSource names the repository.
    const registry = open(`oci://${anonymous.host}/${REPO}`);
    expect(registry.location).toBe(sourceFor(anonymous).location);
    expect((await registry.list()).releases.map((release) => release.tag).sort()).toEqual([V1, V3]);
  });

  it('refuses a corrupted blob and stores nothing', async () => {
    const broken = path.join(scratch, 'broken-mirror');
    await cp(layout, broken, { recursive: true });
    const metadata = await fileDigest(path.join(RELEASES, V1, 'metadata.yaml'));
    await writeFile(path.join(broken, 'blobs', 'sha256', metadata.slice('sha256:'.length)), 'apiVersion: tampered\n');
    const cache = newCache();
    const error = await rejection(new OciLayoutSource(broken, { cache }).fetch(V1));
    expect(error.kind).toBe('invalid-release');
    expect(error.message).toMatch(
      /file metadata\.yaml: blob sha256:\w+ in .* holds sha256:\w+ .*the layout is corrupt/,
    );
    expect(await cacheContents(cache)).toEqual({ entries: 0, temp: [] });
  });
});
