// Decrypts what clusterstack wrote with implementations it did not write, so the tests prove the
// SOPS format rather than agree with themselves:
// - the `age` CLI (Debian's Go age) unwraps the data key from a recipient's armored `enc`;
// - sops-age (npm) decrypts the whole document with an age identity (its own age code), but does
//   not check the MAC;
// - sops-decoder (npm) decrypts the values and verifies the MAC, but only gets its data key from
//   AWS KMS: a fake KMS over real HTTP hands it the key the age CLI unwrapped, through an extra
//   `sops.kms` entry (metadata, outside the MAC), in a child process pointed at it.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { decryptSops } from 'sops-age';
import { decodeYamlDocument } from '../../src/yaml/kube-yaml.js';

const run = promisify(execFile);

/** A fresh age identity made by `age-keygen`, with its recipient. */
export async function ageKeygen(
  dir: string,
  name = 'age.key',
): Promise<{ identityFile: string; identity: string; recipient: string }> {
  const identityFile = path.join(dir, name);
  await run('age-keygen', ['-o', identityFile]);
  const { stdout } = await run('age-keygen', ['-y', identityFile]);
  const identity = (await readFile(identityFile, 'utf8'))
    .split('\n')
    .find((line) => line.startsWith('AGE-SECRET-KEY-'))!;
  return { identityFile, identity, recipient: stdout.trim() };
}

interface SopsMetadata {
  age: { recipient: string; enc: string }[];
  [key: string]: unknown;
}

/** The document's `sops` block, read as Kubernetes reads YAML. */
export function sopsMetadataOf(document: string): SopsMetadata {
  const value = decodeYamlDocument(document).value as { sops?: SopsMetadata };
  if (!value?.sops) throw new Error('not a SOPS document: no top-level sops key');
  return value.sops;
}

/** The data key, unwrapped by the `age` CLI from the stanza of the recipient that `identityFile` belongs to. */
export async function unwrapDataKeyWithAgeCli(
  document: string,
  identityFile: string,
  recipient: string,
): Promise<Buffer> {
  const stanza = sopsMetadataOf(document).age.find((entry) => entry.recipient === recipient);
  if (!stanza) throw new Error(`no age stanza for ${recipient}`);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sops-oracle-'));
  try {
    const file = path.join(dir, 'enc.age');
    await writeFile(file, stanza.enc);
    const { stdout } = await run('age', ['--decrypt', '--identity', identityFile, file], { encoding: 'buffer' });
    return stdout as unknown as Buffer;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The document decrypted by sops-age with `identity` (values only: sops-age ignores the MAC). */
export async function decryptWithSopsAge(document: string, identity: string): Promise<Record<string, unknown>> {
  return (await decryptSops(document, { secretKey: identity, fileType: 'yaml' })) as Record<string, unknown>;
}

const DECODER_SCRIPT = `
const { decrypt } = require('sops-decoder');
let input = '';
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
  decrypt(JSON.parse(input)).then(
    (tree) => { process.stdout.write(JSON.stringify(tree)); },
    (error) => { process.stderr.write(String(error && error.message || error)); process.exit(1); },
  );
});
`;

/**
 * The document decrypted by sops-decoder, which verifies the MAC: rejects when a value or the MAC
 * does not check out. `dataKey` is what the age CLI unwrapped.
 */
export async function decryptWithSopsDecoder(document: string, dataKey: Buffer): Promise<Record<string, unknown>> {
  const tree = decodeYamlDocument(document).value as Record<string, unknown> & { sops: Record<string, unknown> };
  const arn = 'arn:aws:kms:us-east-1:000000000000:key/clusterstack-test';
  tree.sops = { ...tree.sops, kms: [{ arn, enc: dataKey.toString('base64') }] };
  // The fake KMS answers Decrypt with the "ciphertext" it is given: the unwrapped data key.
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      const target = String(request.headers['x-amz-target'] ?? '');
      if (!target.endsWith('.Decrypt')) {
        response
          .writeHead(400, { 'content-type': 'application/x-amz-json-1.1' })
          .end(JSON.stringify({ __type: 'UnsupportedOperation', message: target }));
        return;
      }
      const { CiphertextBlob } = JSON.parse(body) as { CiphertextBlob: string };
      response
        .writeHead(200, { 'content-type': 'application/x-amz-json-1.1' })
        .end(JSON.stringify({ KeyId: arn, Plaintext: CiphertextBlob, EncryptionAlgorithm: 'SYMMETRIC_DEFAULT' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const child = execFile(process.execPath, ['-e', DECODER_SCRIPT], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env: {
        PATH: process.env['PATH'] ?? '',
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        AWS_REGION: 'us-east-1',
        AWS_ENDPOINT_URL_KMS: `http://127.0.0.1:${port}`,
        AWS_EC2_METADATA_DISABLED: 'true',
      },
      maxBuffer: 16 * 1024 * 1024,
    });
    child.stdin!.end(JSON.stringify(tree));
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    if (code !== 0) throw new Error(`sops-decoder rejected the document: ${stderr.trim()}`);
    return JSON.parse(stdout) as Record<string, unknown>;
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
