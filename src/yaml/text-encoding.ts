// Bytes to YAML text as Kubernetes reads them. kubectl's file visitor (cli-runtime resource/visitor.go)
// decodes through unicode.BOMOverride, and go-yaml v2's reader (reader.go, which sigs.k8s.io/yaml,
// Argo CD and Flux run) detects the same byte order marks: UTF-8, UTF-16LE and UTF-16BE with a BOM are
// read, the BOM dropped. Anything else is UTF-8, and go-yaml refuses invalid UTF-8 outright ("invalid
// trailing UTF-8 octet") where a lenient decoder would silently write U+FFFD into the output.
import { Failure } from '../core/failure.js';

/** Text that is not in an encoding Kubernetes reads; `offset` is the byte offset of the first bad byte. */
export class TextEncodingError extends Failure {
  constructor(
    /** go-yaml's own words for it, e.g. "invalid trailing UTF-8 octet". */
    readonly reason: string,
    readonly offset: number,
    /** 1-based line of the bad byte. */
    readonly line: number,
  ) {
    super('fix-input', `${reason} at byte offset ${offset} (line ${line})`);
    this.name = 'TextEncodingError';
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
const UTF16LE = new TextDecoder('utf-16le', { fatal: true, ignoreBOM: false });
const UTF16BE = new TextDecoder('utf-16be', { fatal: true, ignoreBOM: false });

/**
 * The text of a YAML file or stream as Kubernetes decodes it: a UTF-8, UTF-16LE or UTF-16BE byte
 * order mark selects the encoding and is dropped, anything else must be valid UTF-8. Throws
 * TextEncodingError naming the first byte that is not.
 */
export function decodeYamlBytes(bytes: Uint8Array): string {
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) return decodeUtf16(bytes, UTF16LE, true);
  if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) return decodeUtf16(bytes, UTF16BE, false);
  try {
    // The native decoder is the fast path; the byte-by-byte walk only runs to explain a failure.
    return UTF8.decode(bytes);
  } catch {
    throw utf8Error(bytes);
  }
}

/** UTF-8 text without the U+FFFD a lenient decoder would put in, or the first invalid byte (for helm's output). */
export function decodeUtf8Strict(bytes: Uint8Array): { text: string; error?: TextEncodingError } {
  try {
    return { text: UTF8.decode(bytes) };
  } catch {
    return {
      text: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'),
      error: utf8Error(bytes),
    };
  }
}

function decodeUtf16(bytes: Uint8Array, decoder: { decode(input: Uint8Array): string }, littleEndian: boolean): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw utf16Error(bytes, littleEndian);
  }
}

function lineAt(bytes: Uint8Array, offset: number, unit: number, littleEndian = true): number {
  let line = 1;
  for (let at = 0; at + unit <= offset; at += unit) {
    const code =
      unit === 1 ? bytes[at]! : littleEndian ? bytes[at]! | (bytes[at + 1]! << 8) : (bytes[at]! << 8) | bytes[at + 1]!;
    if (code === 0x0a) line += 1;
  }
  return line;
}

/** The first invalid UTF-8 sequence, named as go-yaml's reader names it. */
function utf8Error(bytes: Uint8Array): TextEncodingError {
  const fail = (reason: string, offset: number): TextEncodingError =>
    new TextEncodingError(reason, offset, lineAt(bytes, offset, 1));
  for (let at = 0; at < bytes.length;) {
    const lead = bytes[at]!;
    const width =
      lead < 0x80 ? 1 : (lead & 0xe0) === 0xc0 ? 2 : (lead & 0xf0) === 0xe0 ? 3 : (lead & 0xf8) === 0xf0 ? 4 : 0;
    if (width === 0) return fail('invalid leading UTF-8 octet', at);
    if (at + width > bytes.length) return fail('incomplete UTF-8 octet sequence', at);
    let value = width === 1 ? lead : width === 2 ? lead & 0x1f : width === 3 ? lead & 0x0f : lead & 0x07;
    for (let k = 1; k < width; k += 1) {
      const octet = bytes[at + k]!;
      if ((octet & 0xc0) !== 0x80) return fail('invalid trailing UTF-8 octet', at + k);
      value = (value << 6) | (octet & 0x3f);
    }
    const shortest = value < 0x80 ? 1 : value < 0x800 ? 2 : value < 0x10000 ? 3 : 4;
    if (shortest !== width) return fail('invalid length of a UTF-8 sequence', at);
    if ((value >= 0xd800 && value <= 0xdfff) || value > 0x10ffff) return fail('invalid Unicode character', at);
    at += width;
  }
  // The native decoder refused something the walk accepts: never expected, still reported.
  return fail('invalid UTF-8', 0);
}

/** The first invalid UTF-16 unit, named as go-yaml's reader names it. */
function utf16Error(bytes: Uint8Array, littleEndian: boolean): TextEncodingError {
  const unitAt = (at: number): number =>
    littleEndian ? bytes[at]! | (bytes[at + 1]! << 8) : (bytes[at]! << 8) | bytes[at + 1]!;
  const fail = (reason: string, offset: number): TextEncodingError =>
    new TextEncodingError(
      `${reason} (UTF-16${littleEndian ? 'LE' : 'BE'})`,
      offset,
      lineAt(bytes, offset, 2, littleEndian),
    );
  for (let at = 2; at < bytes.length; at += 2) {
    if (at + 2 > bytes.length) return fail('incomplete UTF-16 character', at);
    const unit = unitAt(at);
    if (unit >= 0xdc00 && unit <= 0xdfff) return fail('unexpected low surrogate area', at);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      if (at + 4 > bytes.length) return fail('incomplete UTF-16 surrogate pair', at);
      const low = unitAt(at + 2);
      if (low < 0xdc00 || low > 0xdfff) return fail('expected low surrogate area', at + 2);
      at += 2;
    }
  }
  return fail('invalid UTF-16', 0);
}
