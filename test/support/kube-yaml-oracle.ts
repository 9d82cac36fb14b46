// The Kubernetes decoding oracle for tests: a tiny Go program (kube-yaml-oracle/main.go) built from
// Debian's sigs.k8s.io/yaml and go-yaml v2 sources, so tests compare against what kubectl, Argo CD
// and Flux really read, not against our own reader. test/install-test-deps.sh installs Go and them.
import { execFile } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SOURCE = path.join(import.meta.dirname, 'kube-yaml-oracle');
const BUILD = path.join(os.tmpdir(), 'clusterstack-kube-yaml-oracle');
let built: Promise<string> | undefined;

/** The oracle binary, built once per process (Go's cache makes later builds cheap). */
function kubeYamlOracle(): Promise<string> {
  built ??= (async () => {
    await mkdir(BUILD, { recursive: true });
    const binary = path.join(BUILD, `oracle-${process.pid}`);
    await run('go', ['build', '-o', binary, '.'], {
      cwd: SOURCE,
      env: { ...process.env, GOPATH: '/usr/share/gocode', GO111MODULE: 'off', GOFLAGS: '', GOCACHE: path.join(BUILD, 'cache') },
    });
    return binary;
  })();
  return built;
}

export type OracleDocument = { line: number; json: string } | { line: number; error: string };

/** Every document of `stream` as Kubernetes decodes it: Go's JSON text (sorted keys), or its error. */
export async function kubernetesDecode(stream: string | Uint8Array): Promise<OracleDocument[]> {
  const binary = await kubeYamlOracle();
  const child = execFile(binary, { maxBuffer: 256 * 1024 * 1024 });
  const output = new Promise<string>((resolve, reject) => {
    let stdout = '';
    child.stdout!.on('data', (chunk: string) => (stdout += chunk));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`oracle exited with ${code}`))));
  });
  child.stdin!.end(stream);
  return (await output)
    .split('\n')
    .filter((line) => line !== '')
    .map((record) => {
      const tab = record.indexOf('\t');
      const line = Number(record.slice(0, tab));
      const rest = record.slice(tab + 1);
      return rest.startsWith('!') ? { line, error: rest.slice(1) } : { line, json: rest };
    });
}

/**
 * A decoded value as Go's encoding/json writes it (sorted keys, HTML-safe escapes, bigint digits),
 * so our reader's result compares with the oracle's text exactly.
 */
export function goJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : `!unsupported ${value}`;
  if (typeof value === 'string') return goString(value);
  if (Array.isArray(value)) return `[${value.map(goJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .sort()
    .map((key) => `${goString(key)}:${goJson(record[key])}`)
    .join(',')}}`;
}

function goString(text: string): string {
  let out = '"';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (char === '"' || char === '\\') out += `\\${char}`;
    else if (char === '\n') out += '\\n';
    else if (char === '\r') out += '\\r';
    else if (char === '\t') out += '\\t';
    else if (code < 0x20 || char === '<' || char === '>' || char === '&' || code === 0x2028 || code === 0x2029) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += char;
  }
  return `${out}"`;
}
