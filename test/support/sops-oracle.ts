// Decrypts what clusterstack wrote with implementations it did not write, so the tests prove the
// SOPS format rather than agree with themselves:
// - the real `sops` (github.com/getsops/sops/v3, built pinned from the Go module proxy by
//   test/engines/build-engines.sh, like the other engines) decrypts the whole document with an age
//   identity and verifies every value's GCM tag and the MAC, as `sops decrypt` does for a user and
//   as Flux's kustomize-controller does with the same Go code;
// - the `age` CLI (Debian's Go age) unwraps the data key from a recipient's armored `enc` on its own.
// Our encryption uses the JS age of the npm `age-encryption`; both oracles use Go's filippo.io/age.
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { decodeYamlDocument } from '../../src/yaml/kube-yaml.js';
import { engineBinary } from './real-kube-api/engine-cache.js';

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

/**
 * The document decrypted by the real `sops decrypt` with the age identity `identity` (the
 * `AGE-SECRET-KEY-...` line), as JSON. Rejects with sops' own message and exit code when a value or
 * the MAC does not check out (exit 51 for a MAC mismatch) or no identity matches.
 */
export async function decryptWithSops(document: string, identity: string): Promise<Record<string, unknown>> {
  // An empty home and working directory: the identity given is the only one sops can find (no
  // ~/.config/sops/age/keys.txt, no ~/.ssh key) and no .sops.yaml applies.
  const home = await mkdtemp(path.join(os.tmpdir(), 'sops-home-'));
  try {
    const child = spawn(engineBinary('sops', 'sops'), ['decrypt', '--input-type', 'yaml', '--output-type', 'json'], {
      cwd: home,
      env: { HOME: home, SOPS_AGE_KEY: identity },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    // A sops that exits before reading all of stdin reports why on stderr and by its exit code.
    child.stdin.on('error', () => undefined);
    child.stdin.end(document);
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', resolve);
    });
    if (code !== 0) throw new Error(`sops decrypt refused the document (exit ${code}): ${stderr.trim()}`);
    return JSON.parse(stdout) as Record<string, unknown>;
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}
