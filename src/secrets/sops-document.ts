// A rendered Secret as a SOPS document, in the format of getsops/sops 3.x (aes/cipher.go, sops.go,
// stores/yaml, age/keysource.go), so that the sops CLI and Flux's kustomize-controller decrypt it.
// No maintained JavaScript library encrypts SOPS files (those on npm only decrypt), so this module
// is the small SOPS layer; age itself (X25519, ChaCha20-Poly1305, armor) is the age-encryption
// package's.
//
// The format, as sops writes it:
// - Every scalar whose path has a key matching `encrypted_regex` becomes
//   `ENC[AES256_GCM,data:<b64>,iv:<b64>,tag:<b64>,type:<str|int|float|bool>]`: AES-256-GCM under a
//   random 32-byte data key with a random 32-byte nonce, the additional data being the path of keys
//   joined with ':' plus a final ':' (`data:ca.crt:`). Empty strings stay empty; nulls are not walked.
// - The MAC is SHA-512 over every scalar of the document (encrypted or not, comments excluded) in
//   document order, each as sops' ToBytes writes it (`True`/`False`, decimal integers), hex in upper
//   case, encrypted like a value with `lastmodified` (RFC 3339) as its additional data.
// - `sops:` holds one `{recipient, enc}` per age recipient (the data key, age-encrypted, armored),
//   `lastmodified`, `mac`, `encrypted_regex` and `version`.
// The document is written by this module (not copied from helm's bytes): sops reads it with go-yaml
// v3 and Kubernetes with go-yaml v2, so every string is double-quoted and every other scalar is a
// plain `true`, `false`, `null` or number, which both read alike; the MAC is computed over exactly
// those values in exactly that order. Comments are left out (sops would encrypt those under `data`).
// Mapping keys are written sorted (byte order, at every level): Flux's kustomize-controller hands
// sops the object re-marshalled as JSON from a Go map, which sorts keys, so only a document already
// in that order gives the same MAC to the sops CLI (file order) and to Flux (sorted order).
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { Encrypter, armor } from 'age-encryption';

/** Keys whose values are encrypted: a Secret's payload; metadata stays readable for review. */
export const SOPS_ENCRYPTED_REGEX = '^(data|stringData)$';
/** The sops version recorded in `sops.version`: the format above is that of sops 3.x. */
const SOPS_FORMAT_VERSION = '3.10.2';

const DATA_KEY_BYTES = 32;
const NONCE_BYTES = 32;
const TAG_BYTES = 16;

type Scalar = string | number | bigint | boolean | null;

/** The pieces of a document the caller chooses: who can decrypt it and the time it records. */
export interface SopsEncryptOptions {
  /** age X25519 recipients (`age1...`), already validated (age-recipients.ts). */
  recipients: string[];
  /** `lastmodified`, RFC 3339 in UTC without fractions (`2026-11-23T10:00:00Z`): sops re-formats it for the MAC's additional data. */
  lastModified: string;
}

/** `object` (a decoded Secret) as a SOPS document encrypted for `options.recipients`. */
export async function encryptAsSopsDocument(
  object: Record<string, unknown>,
  options: SopsEncryptOptions,
): Promise<string> {
  if (options.recipients.length === 0) throw new Error('a SOPS document needs at least one age recipient');
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/.test(options.lastModified))
    throw new Error(`lastmodified "${options.lastModified}" is not RFC 3339 in UTC`);
  if ('sops' in object) throw new Error('the object already has a top-level "sops" key');
  const dataKey = randomBytes(DATA_KEY_BYTES);
  const encryptedRegex = new RegExp(SOPS_ENCRYPTED_REGEX);
  const mac: Buffer[] = [];
  const lines: string[] = [];
  emitMapping(object, [], 0, lines, { dataKey, encryptedRegex, mac });
  const macHex = createMacHex(mac);
  const stanzas = await Promise.all(
    options.recipients.map(async (recipient) => ({ recipient, enc: await wrapDataKey(dataKey, recipient) })),
  );
  lines.push('sops:');
  lines.push('  age:');
  for (const stanza of stanzas) {
    lines.push(`    - recipient: ${stanza.recipient}`);
    lines.push('      enc: |');
    for (const line of stanza.enc.trimEnd().split('\n')) lines.push(`        ${line}`);
  }
  lines.push(`  lastmodified: ${JSON.stringify(options.lastModified)}`);
  lines.push(`  mac: ${encryptValue(macHex, dataKey, options.lastModified)}`);
  lines.push(`  encrypted_regex: ${JSON.stringify(SOPS_ENCRYPTED_REGEX)}`);
  lines.push(`  version: ${SOPS_FORMAT_VERSION}`);
  dataKey.fill(0);
  return `${lines.join('\n')}\n`;
}

interface WalkState {
  dataKey: Buffer;
  encryptedRegex: RegExp;
  /** The bytes of every scalar, in document order (sops' MAC input). */
  mac: Buffer[];
}

/** sops' MAC before encryption: SHA-512 over the scalars' bytes, upper-case hex (Go's %X). */
function createMacHex(parts: Buffer[]): string {
  const hash = createHash('sha512');
  for (const part of parts) hash.update(part);
  return hash.digest('hex').toUpperCase();
}

function emitMapping(
  map: Record<string, unknown>,
  path: string[],
  indent: number,
  lines: string[],
  state: WalkState,
): void {
  const pad = ' '.repeat(indent);
  for (const [key, value] of sortedEntries(map)) {
    const keyText = yamlKey(key);
    const childPath = [...path, key];
    if (isMap(value)) {
      if (Object.keys(value).length === 0) lines.push(`${pad}${keyText}: {}`);
      else {
        lines.push(`${pad}${keyText}:`);
        emitMapping(value, childPath, indent + 2, lines, state);
      }
    } else if (Array.isArray(value)) {
      if (value.length === 0) lines.push(`${pad}${keyText}: []`);
      else {
        lines.push(`${pad}${keyText}:`);
        emitSequence(value, childPath, indent + 2, lines, state);
      }
    } else lines.push(`${pad}${keyText}: ${scalarText(value as Scalar, childPath, state)}`);
  }
}

function emitSequence(items: unknown[], path: string[], indent: number, lines: string[], state: WalkState): void {
  const pad = ' '.repeat(indent);
  for (const item of items) {
    if (isMap(item) && Object.keys(item).length > 0) {
      // `- key: value` then the other keys two columns in, as a block mapping inside the item.
      const nested: string[] = [];
      emitMapping(item, path, indent + 2, nested, state);
      nested[0] = `${pad}- ${nested[0]!.slice(indent + 2)}`;
      lines.push(...nested);
    } else if (Array.isArray(item) && item.length > 0) {
      lines.push(`${pad}-`);
      emitSequence(item, path, indent + 2, lines, state);
    } else if (isMap(item)) lines.push(`${pad}- {}`);
    else if (Array.isArray(item)) lines.push(`${pad}- []`);
    // Sequence items add no key to the path: sops joins only mapping keys for the additional data.
    else lines.push(`${pad}- ${scalarText(item as Scalar, path, state)}`);
  }
}

/** A scalar as written, and its bytes added to the MAC; encrypted when a key on its path matches. */
function scalarText(value: Scalar, path: string[], state: WalkState): string {
  if (value === null || value === undefined) return 'null';
  const { plain, bytes, type } = scalarForSops(value, path);
  state.mac.push(Buffer.from(bytes, 'utf8'));
  if (!path.some((key) => state.encryptedRegex.test(key))) return plain;
  return encryptValue(bytes, state.dataKey, `${path.join(':')}:`, type);
}

/** How a scalar is written (readable alike by go-yaml v2 and v3), its sops bytes and its sops type. */
function scalarForSops(
  value: Exclude<Scalar, null>,
  path: string[],
): { plain: string; bytes: string; type: 'str' | 'int' | 'float' | 'bool' } {
  if (typeof value === 'string') return { plain: JSON.stringify(value), bytes: value, type: 'str' };
  if (typeof value === 'boolean') return { plain: String(value), bytes: value ? 'True' : 'False', type: 'bool' };
  if (typeof value === 'bigint') return { plain: value.toString(), bytes: value.toString(), type: 'int' };
  if (Number.isInteger(value)) return { plain: String(value), bytes: String(value), type: 'int' };
  // Go's strconv.FormatFloat(v, 'f', -1, 64) never uses an exponent; JavaScript does beyond these bounds.
  const text = String(value);
  if (!Number.isFinite(value) || /e/i.test(text))
    throw new Error(`the number ${text} at ${path.join('.')} cannot be written the way sops reads it`);
  return { plain: text.includes('.') ? text : `${text}.0`, bytes: text, type: 'float' };
}

/** One value as sops' cipher writes it; empty plaintext stays empty, as sops keeps it. */
function encryptValue(
  plaintext: string,
  key: Buffer,
  additionalData: string,
  type: 'str' | 'int' | 'float' | 'bool' = 'str',
): string {
  if (plaintext === '' && type === 'str') return '""';
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(additionalData, 'utf8'));
  const data = Buffer.concat([cipher.update(Buffer.from(plaintext, 'utf8')), cipher.final()]);
  const tag = cipher.getAuthTag();
  return `ENC[AES256_GCM,data:${data.toString('base64')},iv:${nonce.toString('base64')},tag:${tag.toString('base64')},type:${type}]`;
}

/** The data key encrypted for one age recipient and armored, as sops' age key source stores it. */
async function wrapDataKey(dataKey: Buffer, recipient: string): Promise<string> {
  const encrypter = new Encrypter();
  encrypter.addRecipient(recipient);
  return armor.encode(await encrypter.encrypt(new Uint8Array(dataKey)));
}

/** Entries in the order Go's encoding/json writes a map: keys compared as UTF-8 bytes. */
function sortedEntries(map: Record<string, unknown>): [string, unknown][] {
  return Object.entries(map).sort(([a], [b]) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
}

function isMap(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Keys plain where no YAML reader could take them for anything but that string; quoted otherwise. */
function yamlKey(key: string): string {
  const ambiguous = /^(y|yes|n|no|true|false|on|off|null|~)$/i.test(key);
  return /^[A-Za-z_][A-Za-z0-9_./-]*$/.test(key) && !ambiguous ? key : JSON.stringify(key);
}
