// The SOPS layer against implementations we did not write: the age CLI unwraps the data key, and
// the real sops (built pinned from the Go module proxy) decrypts the values and verifies the MAC.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encryptAsSopsDocument, SOPS_ENCRYPTED_REGEX } from '../src/secrets/sops-document.js';
import { decodeYamlDocument } from '../src/yaml/kube-yaml.js';
import { builtEngine, engineBinary } from './support/real-kube-api/engine-cache.js';
import { ageKeygen, decryptWithSops, sopsMetadataOf, unwrapDataKeyWithAgeCli } from './support/sops-oracle.js';

const secret = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: {
    name: 'cilium-ca',
    namespace: 'kube-system',
    labels: { 'app.kubernetes.io/part-of': 'cilium', on: 'yes' },
    creationTimestamp: null,
  },
  type: 'Opaque',
  data: { 'ca.crt': 'LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t', 'ca.key': 'c2VjcmV0LWtleS1tYXRlcmlhbA==', empty: '' },
  stringData: { 'config.yaml': 'token: s3cr3t\nport: 6443\n' },
};

let dir: string;
let alice: Awaited<ReturnType<typeof ageKeygen>>;
let bob: Awaited<ReturnType<typeof ageKeygen>>;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sops-document-'));
  alice = await ageKeygen(dir, 'alice.key');
  bob = await ageKeygen(dir, 'bob.key');
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('encryptAsSopsDocument', () => {
  it('writes a document the age CLI and sops (MAC verified) decrypt to the Secret, for every recipient', async () => {
    const document = await encryptAsSopsDocument(secret, {
      recipients: [alice.recipient, bob.recipient],
      lastModified: '2026-11-23T10:00:00Z',
    });
    const dataKeys: Buffer[] = [];
    for (const who of [alice, bob]) {
      const dataKey = await unwrapDataKeyWithAgeCli(document, who.identityFile, who.recipient);
      expect(dataKey).toHaveLength(32);
      dataKeys.push(dataKey);
      expect(await decryptWithSops(document, who.identity)).toEqual(secret);
    }
    // One data key, wrapped for each recipient.
    expect(dataKeys[1]).toEqual(dataKeys[0]);
    const metadata = sopsMetadataOf(document);
    expect(metadata.age.map((entry) => entry.recipient)).toEqual([alice.recipient, bob.recipient]);
    expect(metadata['encrypted_regex']).toBe(SOPS_ENCRYPTED_REGEX);
    expect(metadata['lastmodified']).toBe('2026-11-23T10:00:00Z');
    expect(metadata['version']).toMatch(/^3\.\d+\.\d+$/);
  });

  it('keeps metadata readable and no plaintext value in the document', async () => {
    const document = await encryptAsSopsDocument(secret, {
      recipients: [alice.recipient],
      lastModified: '2026-11-23T10:00:00Z',
    });
    const decoded = decodeYamlDocument(document).value as typeof secret;
    expect(decoded.metadata).toEqual(secret.metadata);
    expect(decoded.data['ca.crt']).toMatch(/^ENC\[AES256_GCM,data:[^,]+,iv:[^,]+,tag:[^,]+,type:str\]$/);
    expect(decoded.data.empty).toBe('');
    for (const value of ['LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t', 'c2VjcmV0LWtleS1tYXRlcmlhbA==', 's3cr3t'])
      expect(document).not.toContain(value);
  });

  it('is refused by sops when a value, the MAC or a readable value was changed, or for another identity', async () => {
    const document = await encryptAsSopsDocument(secret, {
      recipients: [alice.recipient],
      lastModified: '2026-11-23T10:00:00Z',
    });
    expect(await decryptWithSops(document, alice.identity)).toEqual(secret);
    const flip = (text: string, marker: string): string => {
      const start = document.indexOf(marker) + marker.length;
      const char = text[start + 2]!;
      return `${text.slice(0, start + 2)}${char === 'A' ? 'B' : 'A'}${text.slice(start + 3)}`;
    };
    // A flipped byte in an encrypted value: its GCM tag fails.
    await expect(decryptWithSops(flip(document, 'ca.key: ENC[AES256_GCM,data:'), alice.identity)).rejects.toThrow(
      /refused the document \(exit 25\): Error decrypting tree: .*Could not decrypt value: .*message authentication failed/,
    );
    // A flipped byte in the MAC: the MAC's own GCM tag fails.
    await expect(decryptWithSops(flip(document, 'mac: ENC[AES256_GCM,data:'), alice.identity)).rejects.toThrow(
      /refused the document \(exit 51\): Cannot decrypt MAC/,
    );
    // A changed readable value (the namespace) is caught by the MAC alone.
    await expect(
      decryptWithSops(document.replace('namespace: "kube-system"', 'namespace: "default"'), alice.identity),
    ).rejects.toThrow(/refused the document \(exit 51\): MAC mismatch/);
    // And a document for another recipient only: no identity matches.
    await expect(decryptWithSops(document, bob.identity)).rejects.toThrow(
      /refused the document \(exit 128\): Failed to get the data key.*identity did not match any of the recipients/s,
    );
  });
});

describe('encryptAsSopsDocument key order', () => {
  it('writes keys sorted at every level, the order Flux hands the object to sops in (JSON from a Go map)', async () => {
    const document = await encryptAsSopsDocument(secret, {
      recipients: [alice.recipient],
      lastModified: '2026-11-23T10:00:00Z',
    });
    const body = document.slice(0, document.indexOf('\nsops:'));
    const topLevel = body
      .split('\n')
      .filter((line) => /^[A-Za-z"]/.test(line))
      .map((line) => line.split(':')[0]);
    expect(topLevel).toEqual(['apiVersion', 'data', 'kind', 'metadata', 'stringData', 'type']);
    expect(body.indexOf('  ca.crt:')).toBeLessThan(body.indexOf('  ca.key:'));
    expect(body.indexOf('  creationTimestamp:')).toBeLessThan(body.indexOf('  labels:'));
    // The MAC still verifies over the document as written (and so over sorted JSON).
    expect(await decryptWithSops(document, alice.identity)).toEqual(secret);
  });
});

describe('the sops that checks these documents', () => {
  it('is the one versions.json pins, built from its module, and says so', async () => {
    const built = builtEngine('sops');
    expect(built).toMatchObject({ module: 'github.com/getsops/sops/v3', binaries: ['sops'] });
    const { stdout } = await promisify(execFile)(engineBinary('sops', 'sops'), [
      '--version',
      '--disable-version-check',
    ]);
    expect(stdout.trim()).toBe(`sops ${built.version.slice(1)}`);
  });
});
