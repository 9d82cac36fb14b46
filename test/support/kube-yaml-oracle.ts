// The Kubernetes decoding oracle for tests: a tiny Go program (kube-yaml-oracle/main.go) built from
// Debian's sigs.k8s.io/yaml and go-yaml v2 sources, so tests compare against what kubectl, Argo CD
// and Flux really read, not against our own reader. test/install-test-deps.sh installs Go and them.
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, rename } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SOURCE = path.join(import.meta.dirname, 'kube-yaml-oracle');
const GOPATH = '/usr/share/gocode';
/** Per machine, not per run (a run's TMPDIR is removed at its end): Go's build cache and the built oracles. */
const CACHE = path.join(os.homedir(), '.cache', 'clusterstack-gitops', 'kube-yaml-oracle');
let built: Promise<string> | undefined;

/**
 * What the binary is built from: our source, the Go toolchain and the Debian sources it compiles
 * (their files' names, sizes and times: a package upgrade changes them).
 */
function buildKey(): string {
  const hash = createHash('sha256');
  for (const file of readdirSync(SOURCE).sort())
    hash
      .update(`${file}\0`)
      .update(readFileSync(path.join(SOURCE, file)))
      .update('\0');
  hash.update(execFileSync('go', ['env', 'GOVERSION'], { encoding: 'utf8' }));
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    )) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.go')) hash.update(`${full} ${statSync(full).size} ${statSync(full).mtimeMs}\n`);
    }
  };
  for (const dependency of ['sigs.k8s.io/yaml', 'gopkg.in/yaml.v2'])
    if (existsSync(path.join(GOPATH, 'src', dependency))) walk(path.join(GOPATH, 'src', dependency));
  return hash.digest('hex').slice(0, 16);
}

/** The oracle binary, built once per machine and source (the suite's processes share it). */
function kubeYamlOracle(): Promise<string> {
  built ??= (async () => {
    const binary = path.join(CACHE, `oracle-${buildKey()}`);
    if (existsSync(binary)) return binary;
    await mkdir(CACHE, { recursive: true });
    // Built aside and renamed into place: a parallel worker sees the whole binary or none.
    const partial = `${binary}.${process.pid}.partial`;
    await run('go', ['build', '-o', partial, '.'], {
      cwd: SOURCE,
      env: { ...process.env, GOPATH, GO111MODULE: 'off', GOFLAGS: '', GOCACHE: path.join(CACHE, 'go-build') },
    });
    await rename(partial, binary);
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
    else if (code < 0x20 || char === '<' || char === '>' || char === '&' || code === 0x2028 || code === 0x2029)
      out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += char;
  }
  return `${out}"`;
}
