// The OCI output against real registries (Debian docker-registry: anonymous, htpasswd, read-only),
// read back with skopeo; and the reproducible tar it is built from.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  contentTagFor,
  CREATED_ANNOTATION,
  OciArtifactPublisher,
  type OciArtifactPublisherOptions,
  parseOciArtifactReference,
  RENDERED_TREE_ARTIFACT_TYPE,
  RENDERED_TREE_LAYER,
  REPRODUCIBLE_CREATED,
  REVISION_ANNOTATION,
  SOURCE_ANNOTATION,
} from '../gitops/oci-artifact-publisher.js';
import { PublishError } from '../gitops/publish-error.js';
import type { ChangeSummary } from '../src/output/tree-changes.js';
import type { RenderedTree } from '../src/output/rendered-tree.js';
import { readTarTree, reproducibleTar, reproducibleTarGzip } from '../gitops/reproducible-tar.js';
import { InputError } from '../src/core/problem.js';
import { EMPTY_CONFIG, OCI_IMAGE_CONFIG, OCI_MANIFEST } from '../src/oci/oci-manifest.js';
import { RegistryClient } from '../src/oci/registry-client.js';
import { defaultRemoteFetch } from '../src/http/remote-fetch.js';
import { startRegistry, type TestRegistry } from './support/registry/index.js';

const run = promisify(execFile);
const SOURCE = 'https://github.com/example/fleet';
const FAST_RETRY = { attempts: 2, baseDelayMs: 1, maxDelayMs: 1 };
const noSleep = async (): Promise<void> => {};
const CHANGE: ChangeSummary = {
  title: 'Render',
  body: '',
  trailers: { 'Clusterstack-Input-Digest': `sha256:${'a'.repeat(64)}` },
};

function tree(files: Record<string, string>): RenderedTree {
  return new Map(Object.entries(files));
}

const FIRST = tree({
  'management/default/stack-v1/clusterclass.yaml': 'kind: ClusterClass\n',
  'management/default/stack-v1/kustomization.yaml': 'resources:\n- clusterclass.yaml\n',
  'clusters/default/alpha/cni/kustomization.yaml': 'resources: []\n',
  'README.md': '# Rendered\n',
});

function sha256(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

async function rejection<T extends Error>(promise: Promise<unknown>, type: new (...args: never[]) => T): Promise<T> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(type);
  return error as T;
}

/** A fetch that records every request as `METHOD path`. */
function recordingFetch(): { fetch: typeof fetch; requests: string[] } {
  const requests: string[] = [];
  return {
    requests,
    fetch: (input, init) => {
      const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
      requests.push(`${init?.method ?? 'GET'} ${url.pathname}`);
      return defaultRemoteFetch(input, init);
    },
  };
}

let anonymous: TestRegistry;
let basic: TestRegistry;
let readOnly: TestRegistry;
let scratch: string;
let repositories = 0;

beforeAll(async () => {
  [anonymous, basic, readOnly] = await Promise.all([
    startRegistry(),
    startRegistry({ auth: 'basic' }),
    startRegistry({ readOnly: true }),
  ]);
  scratch = await mkdtemp(path.join(os.tmpdir(), 'oci-artifact-publisher-'));
});

afterAll(async () => {
  await Promise.all([anonymous?.stop(), basic?.stop(), readOnly?.stop()]);
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

function publisher(reference: string, options: Partial<OciArtifactPublisherOptions> = {}): OciArtifactPublisher {
  return new OciArtifactPublisher({
    reference,
    source: SOURCE,
    plainHttp: true,
    retry: FAST_RETRY,
    sleep: noSleep,
    tempDir: scratch,
    ...options,
  });
}

function newRepository(): string {
  repositories += 1;
  return `fleet/rendered-${repositories}`;
}

async function skopeoRaw(host: string, repository: string, reference: string): Promise<string> {
  const separator = reference.startsWith('sha256:') ? '@' : ':';
  const { stdout } = await run('skopeo', [
    'inspect',
    '--raw',
    '--tls-verify=false',
    `docker://${host}/${repository}${separator}${reference}`,
  ]);
  return stdout;
}

describe('reproducibleTar', () => {
  it('gives the same bytes for the same tree, whatever order the files came in', () => {
    const reversed = new Map([...FIRST].reverse());
    expect(reproducibleTar(reversed).equals(reproducibleTar(FIRST))).toBe(true);
    expect(reproducibleTarGzip(reversed).gzip.equals(reproducibleTarGzip(FIRST).gzip)).toBe(true);
  });

  it('writes sorted ustar entries, directories first, with zero owners and times', async () => {
    const file = path.join(scratch, 'listing.tar.gz');
    await writeFile(file, reproducibleTarGzip(FIRST).gzip);
    const { stdout } = await run('tar', ['--list', '--verbose', '--numeric-owner', '--full-time', '-z', '-f', file]);
    expect(stdout.trim().split('\n')).toEqual([
      '-rw-r--r-- 0/0              11 1970-01-01 00:00:00 README.md',
      'drwxr-xr-x 0/0               0 1970-01-01 00:00:00 clusters/',
      'drwxr-xr-x 0/0               0 1970-01-01 00:00:00 clusters/default/',
      'drwxr-xr-x 0/0               0 1970-01-01 00:00:00 clusters/default/alpha/',
      'drwxr-xr-x 0/0               0 1970-01-01 00:00:00 clusters/default/alpha/cni/',
      '-rw-r--r-- 0/0              14 1970-01-01 00:00:00 clusters/default/alpha/cni/kustomization.yaml',
      'drwxr-xr-x 0/0               0 1970-01-01 00:00:00 management/',
      'drwxr-xr-x 0/0               0 1970-01-01 00:00:00 management/default/',
      'drwxr-xr-x 0/0               0 1970-01-01 00:00:00 management/default/stack-v1/',
      '-rw-r--r-- 0/0              19 1970-01-01 00:00:00 management/default/stack-v1/clusterclass.yaml',
      '-rw-r--r-- 0/0              31 1970-01-01 00:00:00 management/default/stack-v1/kustomization.yaml',
    ]);
    const tar = reproducibleTar(FIRST);
    // ustar magic, empty owner names, and no pax header (type "x") anywhere.
    expect(tar.subarray(257, 265).toString('latin1')).toBe('ustar\u000000');
    expect(tar.subarray(265, 265 + 64).every((byte) => byte === 0)).toBe(true);
    for (let offset = 0; offset < tar.length; offset += 512)
      expect(String.fromCharCode(tar[offset + 156] ?? 0)).not.toBe('x');
  });

  it('writes a gzip header without file name or time', () => {
    const { gzip, tar } = reproducibleTarGzip(FIRST);
    expect([...gzip.subarray(0, 10)]).toEqual([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 3]);
    expect(gunzipSync(gzip).equals(tar)).toBe(true);
  });

  it('names long paths through the ustar prefix and refuses what ustar cannot name', async () => {
    const deep = `${'d'.repeat(90)}/${'e'.repeat(60)}/${'f'.repeat(95)}.yaml`;
    const long = tree({ [deep]: 'deep\n' });
    const file = path.join(scratch, 'long.tar');
    await writeFile(file, reproducibleTar(long));
    const { stdout } = await run('tar', ['--list', '-f', file]);
    expect(stdout.trim().split('\n')).toContain(deep);
    expect(readTarTree(reproducibleTarGzip(long).gzip, 'long')).toEqual(long);

    const tooLong = `${'d'.repeat(90)}/${'e'.repeat(90)}/${'f'.repeat(90)}.yaml`;
    const error = (() => {
      try {
        reproducibleTar(tree({ [tooLong]: 'x' }));
        return undefined;
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(PublishError);
    expect((error as PublishError).kind).toBe('invalid-input');
    expect((error as PublishError).message).toContain('too long for a tar archive');
  });

  it('reads back exactly the tree, and refuses entries a tree cannot hold', () => {
    expect(readTarTree(reproducibleTarGzip(FIRST).gzip, 'first')).toEqual(FIRST);
    const tar = reproducibleTar(tree({ 'a.yaml': 'a\n' }));
    const rename = (name: string, type = '0'): Buffer => {
      const copy = Buffer.from(tar);
      copy.fill(0, 0, 100);
      copy.write(name, 0, 'utf8');
      copy.write(type, 156, 'latin1');
      copy.fill(0x20, 148, 156);
      let sum = 0;
      for (let i = 0; i < 512; i++) sum += copy[i] ?? 0;
      copy.write(`${sum.toString(8).padStart(6, '0')}\u0000 `, 148, 'latin1');
      return copy;
    };
    expect(() => readTarTree(rename('../escape.yaml'), 'evil')).toThrow(/points outside the archive/);
    expect(() => readTarTree(rename('/etc/passwd'), 'evil')).toThrow(/absolute path/);
    expect(() => readTarTree(rename('link.yaml', '2'), 'evil')).toThrow(/not a regular file or directory/);
    expect(() => readTarTree(rename('.git/config'), 'evil')).toThrow(/\.git directory/);
    expect(() => readTarTree(Buffer.from('not a tar at all, but long enough '.repeat(20)), 'junk')).toThrow(
      /corrupt tar header/,
    );
  });
});

describe('parseOciArtifactReference', () => {
  it('splits registry, repository and tag', () => {
    expect(parseOciArtifactReference('oci://127.0.0.1:5000/fleet/rendered:v1.2_3')).toEqual({
      registry: '127.0.0.1:5000',
      apiHost: '127.0.0.1:5000',
      repository: 'fleet/rendered',
      tag: 'v1.2_3',
    });
    expect(parseOciArtifactReference('oci://ghcr.io/org/fleet:latest').tag).toBe('latest');
  });

  it.each([
    ['https://ghcr.io/org/fleet:latest', 'not an OCI reference'],
    ['oci://ghcr.io/org/fleet', 'names no tag'],
    ['oci://ghcr.io/org/fleet:', 'is not a valid tag'],
    ['oci://ghcr.io/org/fleet:-bad', 'is not a valid tag'],
    ['oci://ghcr.io/org/fleet:v1+build', 'is not a valid tag'],
    [`oci://ghcr.io/org/fleet:${'t'.repeat(129)}`, 'is not a valid tag'],
    ['oci://ghcr.io/org/fleet@sha256:0123', 'names a digest'],
    ['oci://ghcr.io/Org/Fleet:v1', 'not a valid repository path component'],
    ['oci://user:secret@ghcr.io/org/fleet:v1', 'credentials in the reference are not allowed'],
  ])('refuses %s', (reference, message) => {
    let error: unknown;
    try {
      new OciArtifactPublisher({ reference });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).message).toContain(message);
    expect((error as InputError).message).not.toContain('secret');
  });
});

describe('OciArtifactPublisher', () => {
  it('pushes one layer that skopeo reads back byte for byte, under the tag and a content tag', async () => {
    const repository = newRepository();
    const oci = publisher(`oci://${anonymous.host}/${repository}:production`);
    expect(oci.target).toBe(`oci://${anonymous.host}/${repository}:production`);
    expect(await oci.readPrevious()).toEqual(new Map());
    const result = await oci.publish(FIRST, CHANGE);
    expect(result).toMatchObject({ changed: true, removed: [] });
    expect(result.written).toEqual([...FIRST.keys()].sort());

    const raw = await skopeoRaw(anonymous.host, repository, 'production');
    expect(sha256(Buffer.from(raw))).toBe(result.revision);
    const { tar, gzip } = reproducibleTarGzip(FIRST);
    const manifest = JSON.parse(raw) as Record<string, unknown>;
    expect(manifest).toEqual({
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      artifactType: RENDERED_TREE_ARTIFACT_TYPE,
      config: { mediaType: EMPTY_CONFIG.mediaType, digest: EMPTY_CONFIG.digest, size: 2, data: EMPTY_CONFIG.data },
      layers: [
        {
          mediaType: RENDERED_TREE_LAYER,
          digest: sha256(gzip),
          size: gzip.length,
          annotations: { 'org.opencontainers.image.title': 'rendered-tree.tar.gz' },
        },
      ],
      annotations: {
        [CREATED_ANNOTATION]: REPRODUCIBLE_CREATED,
        [REVISION_ANNOTATION]: sha256(tar),
        [SOURCE_ANNOTATION]: SOURCE,
      },
    });
    expect(await skopeoRaw(anonymous.host, repository, contentTagFor(sha256(gzip)))).toBe(raw);
    expect(contentTagFor(sha256(gzip))).toMatch(/^sha-[0-9a-f]{12}$/);

    const copy = path.join(scratch, `copy-${repositories}`);
    await run('skopeo', [
      '--insecure-policy',
      'copy',
      '--src-tls-verify=false',
      `docker://${anonymous.host}/${repository}:production`,
      `dir:${copy}`,
    ]);
    const layerFile = path.join(copy, sha256(gzip).slice('sha256:'.length));
    expect((await readFile(layerFile)).equals(gzip)).toBe(true);
    expect((await readdir(copy)).sort()).toEqual(
      [
        EMPTY_CONFIG.digest.slice('sha256:'.length),
        sha256(gzip).slice('sha256:'.length),
        'manifest.json',
        'version',
      ].sort(),
    );
  });

  it('pushes nothing for the same tree, and gives the same digest wherever the tree is pushed', async () => {
    const repository = newRepository();
    const first = await publisher(`oci://${anonymous.host}/${repository}:v1`).publish(FIRST, CHANGE);

    const recorder = recordingFetch();
    const again = publisher(`oci://${anonymous.host}/${repository}:v1`, { fetch: recorder.fetch });
    const reordered = new Map([...FIRST].reverse());
    const second = await again.publish(reordered, { ...CHANGE, title: 'Another render' });
    expect(second).toEqual({ changed: false, written: [], removed: [], revision: first.revision });
    expect(recorder.requests.filter((request) => !request.startsWith('GET ') && !request.startsWith('HEAD '))).toEqual(
      [],
    );

    // Another tag, another publisher, another moment: the same manifest.
    const elsewhere = await publisher(`oci://${anonymous.host}/${newRepository()}:staging`).publish(FIRST, CHANGE);
    expect(elsewhere.revision).toBe(first.revision);
  });

  it('moves the tag to a new digest when the tree changes, keeping the old content tag', async () => {
    const repository = newRepository();
    const oci = publisher(`oci://${anonymous.host}/${repository}:main`);
    const first = await oci.publish(FIRST, CHANGE);
    const next = new Map(FIRST);
    next.delete('README.md');
    next.set('clusters/default/beta/cni/kustomization.yaml', 'resources: []\n');
    next.set('management/default/stack-v1/clusterclass.yaml', 'kind: ClusterClass\nspec: {}\n');

    const recorder = recordingFetch();
    const second = await publisher(`oci://${anonymous.host}/${repository}:main`, { fetch: recorder.fetch }).publish(
      next,
      CHANGE,
    );
    expect(second.changed).toBe(true);
    expect(second.revision).not.toBe(first.revision);
    expect(second.written).toEqual([
      'clusters/default/beta/cni/kustomization.yaml',
      'management/default/stack-v1/clusterclass.yaml',
    ]);
    expect(second.removed).toEqual(['README.md']);
    // The empty config was there already; the tag moves last.
    const writes = recorder.requests.filter((request) => request.startsWith('PUT ') || request.startsWith('POST '));
    expect(writes.filter((request) => request.startsWith('POST '))).toHaveLength(1);
    expect(writes.at(-1)).toBe(`PUT /v2/${repository}/manifests/main`);

    expect(sha256(Buffer.from(await skopeoRaw(anonymous.host, repository, 'main')))).toBe(second.revision);
    expect(
      sha256(
        Buffer.from(
          await skopeoRaw(anonymous.host, repository, contentTagFor(sha256(reproducibleTarGzip(FIRST).gzip))),
        ),
      ),
    ).toBe(first.revision);
    expect(await publisher(`oci://${anonymous.host}/${repository}:main`).readPrevious()).toEqual(next);
  });

  it('reads back what it pushed, and an empty tree for a missing tag or repository', async () => {
    const repository = newRepository();
    await publisher(`oci://${anonymous.host}/${repository}:v1`).publish(FIRST, CHANGE);
    const fresh = publisher(`oci://${anonymous.host}/${repository}:v1`);
    expect(await fresh.readPrevious()).toEqual(FIRST);
    expect(await publisher(`oci://${anonymous.host}/${repository}:v2`).readPrevious()).toEqual(new Map());
    expect(await publisher(`oci://${anonymous.host}/no/such-repository:v1`).readPrevious()).toEqual(new Map());
  });

  it('records the time in created only when asked not to be reproducible', async () => {
    const repository = newRepository();
    const clock = (): Date => new Date('2030-05-06T07:08:09.123Z');
    await publisher(`oci://${anonymous.host}/${repository}:v1`, { reproducible: false, clock }).publish(FIRST, CHANGE);
    const manifest = JSON.parse(await skopeoRaw(anonymous.host, repository, 'v1')) as {
      annotations: Record<string, string>;
    };
    expect(manifest.annotations[CREATED_ANNOTATION]).toBe('2030-05-06T07:08:09Z');
  });

  it('refuses to overwrite a tag that holds a container image', async () => {
    const repository = newRepository();
    const client = new RegistryClient({ registry: anonymous.host, plainHttp: true });
    const config = Buffer.from('{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}');
    const configBlob = await client.pushBlob(repository, config);
    const image = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_MANIFEST,
        config: { mediaType: OCI_IMAGE_CONFIG, digest: configBlob.digest, size: configBlob.size },
        layers: [],
      }),
    );
    const imageDigest = await client.pushManifest(repository, 'latest', image, OCI_MANIFEST);

    const error = await rejection(
      publisher(`oci://${anonymous.host}/${repository}:latest`).publish(FIRST, CHANGE),
      PublishError,
    );
    expect(error.kind).toBe('invalid-target');
    expect(error.message).toContain('holds a container image, not a rendered tree');
    expect((await client.getManifest(repository, 'latest')).digest).toBe(imageDigest);
  });

  it('pushes with credentials, and reports refused credentials with nothing tagged', async () => {
    const repository = newRepository();
    const credentials = { username: basic.username, password: basic.password };
    const result = await publisher(`oci://${basic.host}/${repository}:v1`, { credentials }).publish(FIRST, CHANGE);
    expect(result.changed).toBe(true);

    const next = new Map(FIRST).set('extra.yaml', 'x\n');
    const wrong = await rejection(
      publisher(`oci://${basic.host}/${repository}:v1`, {
        credentials: { username: basic.username, password: 'wrong' },
      }).publish(next, CHANGE),
      PublishError,
    );
    expect(wrong.kind).toBe('auth');
    expect(wrong.message).toContain('refused the credentials');
    expect(wrong.message).toContain('CLUSTERSTACK_REGISTRY_PASSWORD');
    expect(wrong.message).not.toContain('wrong');
    const missing = await rejection(
      publisher(`oci://${basic.host}/${repository}:v1`).publish(next, CHANGE),
      PublishError,
    );
    expect(missing.kind).toBe('auth');
    expect(missing.message).toContain('requires credentials');

    const client = new RegistryClient({ registry: basic.host, plainHttp: true, credentials });
    expect((await client.getManifest(repository, 'v1')).digest).toBe(result.revision);
    expect((await client.listTags(repository)).sort()).toEqual(
      [contentTagFor(sha256(reproducibleTarGzip(FIRST).gzip)), 'v1'].sort(),
    );
  });

  it('reports a read-only registry refusing the upload, with no tag created', async () => {
    const oci = publisher(`oci://${readOnly.host}/fleet/rendered:v1`);
    expect(await oci.readPrevious()).toEqual(new Map());
    const error = await rejection(oci.publish(FIRST, CHANGE), PublishError);
    expect(error.kind).toBe('rejected');
    expect(error.message).toContain('405');
    expect(error.message).toContain('nothing was tagged');
    expect(await oci.readPrevious()).toEqual(new Map());
  });

  it('says to pass --plain-http when the registry speaks plain HTTP', async () => {
    const error = await rejection(
      publisher(`oci://${anonymous.host}/${newRepository()}:v1`, { plainHttp: false }).publish(FIRST, CHANGE),
      PublishError,
    );
    expect(error.message).toContain('--plain-http');
  });
});
