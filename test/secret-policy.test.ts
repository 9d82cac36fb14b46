import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../src/api/types.js';
import { secretReason } from '../src/render/secret-policy.js';
import { readManifests } from '../src/render/manifest-objects.js';

const PEM = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n';
const configMap = (value: string): KubeObject =>
  ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'k' }, data: { key: value } }) as unknown as KubeObject;

describe('secretReason', () => {
  it('finds a base64-encoded private key whatever bytes come before it, wrapped or not', () => {
    for (const before of ['', 'a', 'ab', '\n', 'xyz\n']) {
      const encoded = Buffer.from(`${before}${PEM}`).toString('base64');
      expect(secretReason(configMap(encoded))).toBe('contains a private key');
      // Wrapped at 76 columns, as `base64` and PEM bundles write it.
      expect(secretReason(configMap(encoded.replace(/.{76}/g, '$&\n')))).toBe('contains a private key');
      expect(secretReason(configMap(encoded.replace(/.{4}/g, '$& ')))).toBe('contains a private key');
    }
  });

  it('leaves long strings that only look like base64 alone', () => {
    const checksum = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
    const description = 'the name of the Secret that holds the credentials this controller uses to reach the API';
    const padded = Buffer.from('no key in here, only some text that is long enough').toString('base64');
    for (const value of [checksum, description, padded]) expect(secretReason(configMap(value))).toBeUndefined();
  });
});

describe('API server data limit', () => {
  it('counts data that aliases expand beyond 1 MiB although the text is short', () => {
    const text = `---\n# Source: addons/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  a: &v ${'v'.repeat(300 * 1024)}\n  b: *v\n  c: *v\n  d: *v\n`;
    expect(readManifests(text, 'chart').problems).toEqual([
      expect.stringMatching(/ConfigMap big holds 1228800 bytes of data, over the 1048576 \(1 MiB\)/),
    ]);
  });
});
