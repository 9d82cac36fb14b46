// `render --secrets encrypt` for real: the example stack whose addon chart generates a CA and a
// server certificate with genCA, rendered by real helm into a real Git repository, and every Secret
// decrypted by the real sops (built pinned from the Go module proxy; it verifies the MAC) back to
// exactly what helm rendered. Also: stable bytes, rotation, hand edits, .sops.yaml, Flux wiring,
// no plaintext anywhere on disk or in output, and bad input writing nothing.
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveHelmBinary } from '../renderers/helm-binary.js';
import { decodeYamlDocument, splitYamlDocuments } from '../src/yaml/kube-yaml.js';
import { renderWithReport, type RenderRun, runClusterstack, tempDir, writeTree } from './support/cli.js';
import { GitSandbox } from './support/git-repos.js';
import { writeScript } from './support/helm-fixtures.js';
import { ageKeygen, decryptWithSops, sopsMetadataOf } from './support/sops-oracle.js';

const MANIFESTS = path.resolve('examples/sops-secrets/manifests');
const RELEASES = path.resolve('examples/sops-secrets/releases');
const STAGE = 'clusters/cluster-stacks/echo/cluster-addon';
const SECRET_FILES = [`${STAGE}/secret-cilium-ca.yaml`, `${STAGE}/secret-hubble-server-certs.yaml`];
const FLUX = ['--gitops', 'flux', '--gitops-url', 'https://git.example.test/fleet.git'];

const sandbox = new GitSandbox();
afterAll(() => sandbox.cleanup());

type Run = RenderRun;
const render = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> =>
  renderWithReport([MANIFESTS, '--release-source', RELEASES, ...args], env);

/** The Secrets helm printed (through the capturing wrapper), by name, as Kubernetes reads them. */
async function helmSecrets(capture: string): Promise<Map<string, Record<string, any>>> {
  const secrets = new Map<string, Record<string, any>>();
  // The capture also holds helm's other output (its version, evaluated values): only Secret documents count.
  for (const document of splitYamlDocuments(await readFile(capture, 'utf8'))) {
    if (!/^kind: Secret$/m.test(document.text)) continue;
    const value = decodeYamlDocument(document.text).value as Record<string, any>;
    secrets.set(value['metadata'].name, value);
  }
  return secrets;
}

/** Every regular file under `dir`, as bytes. */
async function allFiles(dir: string): Promise<Buffer[]> {
  const out: Buffer[] = [];
  const walk = async (current: string): Promise<void> => {
    for (const entry of await readdir(current, { withFileTypes: true }).catch(() => [])) {
      const full = path.join(current, entry.name);
      if (entry.isDirectory()) await walk(full);
      else if (entry.isFile()) out.push(await readFile(full));
    }
  };
  await walk(dir);
  return out;
}

// Steps of one history on one output, in order (shuffle: false): the first render's checks and its
// no-op rerun come before the renders that change the recipients or a file by hand.
const IN_ORDER = { shuffle: false };
describe('render --secrets encrypt (genCA example, real helm, git, age and sops)', IN_ORDER, () => {
  let alice: Awaited<ReturnType<typeof ageKeygen>>;
  let bob: Awaited<ReturnType<typeof ageKeygen>>;
  let remote: string;
  let cache: string;
  let capture: string;
  let helm: string;
  let first: Run;

  beforeAll(async () => {
    const keys = await tempDir('csk-age-');
    alice = await ageKeygen(keys, 'alice.key');
    bob = await ageKeygen(keys, 'bob.key');
    remote = sandbox.bareRepo('sops');
    cache = await tempDir('csk-sops-cache-');
    // helm behind a wrapper that also appends its output to a file outside every directory checked for plaintext.
    const captureDir = await tempDir('csk-helm-capture-');
    capture = path.join(captureDir, 'helm-output.yaml');
    const real = (await resolveHelmBinary({ pathEnv: process.env.PATH })).path;
    helm = await writeScript(
      path.join(captureDir, 'helm'),
      `out="${captureDir}/out.$$"\n"${real}" "$@" > "$out"\nrc=$?\ncat "$out" >> "${capture}"\ncat "$out"\nrm -f "$out"\nexit $rc`,
    );
    first = await render([
      '--git',
      remote,
      '--secrets',
      'encrypt',
      '--age-recipient',
      alice.recipient,
      ...FLUX,
      '--helm',
      helm,
      '--cache-dir',
      cache,
    ]);
  });

  it('renders with no other flag change and reports the encrypted Secrets by name', () => {
    expect(first.code, first.stderr).toBe(0);
    expect(first.report.secrets).toEqual({
      units: [
        {
          dir: STAGE,
          count: 2,
          names: ['kube-system/cilium-ca', 'kube-system/hubble-server-certs'],
          encryptedInThisRun: 2,
        },
      ],
      total: 2,
      encryptedInThisRun: 2,
      recipientsChanged: 0,
    });
  });

  it('writes Secrets that sops decrypts (MAC verified) to exactly what helm rendered', async () => {
    const files = sandbox.files(remote, 'main');
    const rendered = await helmSecrets(capture);
    expect([...rendered.keys()].sort()).toEqual(['cilium-ca', 'hubble-server-certs']);
    for (const file of SECRET_FILES) {
      const document = files[file]!;
      expect(sopsMetadataOf(document).age.map((entry) => entry.recipient)).toEqual([alice.recipient]);
      const expected = rendered.get((decodeYamlDocument(document).value as any).metadata.name)!;
      expect(await decryptWithSops(document, alice.identity)).toEqual(expected);
    }
    // The ConfigMap beside them is helm's document, unencrypted.
    expect(files[`${STAGE}/configmap-hubble-config.yaml`]).toContain('cluster-name: "echo"');
  });

  it('leaves no plaintext in the Git history, the work tree and cache, or anything printed', async () => {
    const secrets = [...(await helmSecrets(capture)).values()];
    const needles = new Set<string>();
    for (const secret of secrets) {
      for (const value of Object.values(secret['data'] as Record<string, string>)) {
        needles.add(value);
        // And the PEM body lines of the decoded key material.
        for (const line of Buffer.from(value, 'base64').toString('utf8').split('\n'))
          if (line.length >= 40) needles.add(line);
      }
    }
    expect(needles.size).toBeGreaterThan(5);
    // A control: the values are helm's real output (the capture, outside the checked directories, holds them).
    const captured = await readFile(capture);
    for (const secret of secrets)
      for (const value of Object.values(secret['data'] as Record<string, string>))
        expect(captured.includes(value)).toBe(true);
    const history = sandbox.git(remote, 'log', '-p', '--all', '--format=%H%n%B');
    const revisions = sandbox.git(remote, 'rev-list', '--all').split('\n');
    const everything = [
      history,
      first.stdout,
      first.stderr,
      // Every commit's message and patch, as git show prints them: one git show for all of them.
      sandbox.git(remote, 'show', '--format=%B', ...revisions),
    ];
    const onDisk = await allFiles(cache);
    expect(onDisk.length).toBeGreaterThan(10);
    for (const needle of needles) {
      for (const text of everything) expect(text.includes(needle)).toBe(false);
      for (const bytes of onDisk) expect(bytes.includes(needle)).toBe(false);
    }
  });

  it('wires decryption into the Flux Kustomization of that directory only, and says in the README where the key goes', () => {
    const files = sandbox.files(remote, 'main');
    const stage = decodeYamlDocument(files['flux/clusters/cluster-stacks/echo/cluster-addon.yaml']!).value as any;
    expect(stage.spec.decryption).toEqual({ provider: 'sops', secretRef: { name: 'sops-age' } });
    const release = decodeYamlDocument(files['flux/management/cluster-stacks/docker-hubble-1-30-v1.yaml']!)
      .value as any;
    expect(release.spec.decryption).toBeUndefined();
    expect(files['README.md']).toContain(
      '| kube-system/cilium-ca | `clusters/cluster-stacks/echo/cluster-addon/secret-cilium-ca.yaml` | Flux: Secret `sops-age` (key `age.agekey`) in namespace `cluster-stacks` of the management cluster |',
    );
  });

  it('keeps every encrypted file byte for byte when nothing changed: no commit', async () => {
    const before = sandbox.files(remote, 'main');
    const commits = sandbox.commitCount(remote, 'main');
    const again = await render([
      '--git',
      remote,
      '--secrets',
      'encrypt',
      '--age-recipient',
      alice.recipient,
      ...FLUX,
      '--cache-dir',
      cache,
    ]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.report.changed).toBe(false);
    expect(again.report.helmProcesses).toBe(0);
    expect(again.report.secrets.encryptedInThisRun).toBe(0);
    expect(sandbox.commitCount(remote, 'main')).toBe(commits);
    expect(sandbox.files(remote, 'main')).toEqual(before);
  });

  it("plan given render's secret flags shows every unit reused; without them, every unit to render", async () => {
    const plan = (flags: string[]) =>
      runClusterstack([
        'plan',
        MANIFESTS,
        '--release-source',
        RELEASES,
        '--git',
        remote,
        '--gitops',
        'flux',
        '--cache-dir',
        cache,
        '--json',
        ...flags,
      ]);
    const decisions = (stdout: string): string[] => [
      ...new Set((JSON.parse(stdout) as { units: { decision: string }[] }).units.map((unit) => unit.decision)),
    ];
    const same = await plan(['--secrets', 'encrypt', '--age-recipient', alice.recipient]);
    expect(same.code, same.stderr).toBe(0);
    expect(decisions(same.stdout)).toEqual(['reuse']);
    const other = await plan([]);
    expect(other.code, other.stderr).toBe(0);
    expect(decisions(other.stdout)).toEqual(['render']);
  });

  it('encrypts every Secret again, once, when the recipients change, and says so', async () => {
    const commits = sandbox.commitCount(remote, 'main');
    const rotated = await render([
      '--git',
      remote,
      '--secrets',
      'encrypt',
      '--age-recipient',
      bob.recipient,
      ...FLUX,
      '--cache-dir',
      cache,
    ]);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.report.secrets).toMatchObject({ total: 2, encryptedInThisRun: 2, recipientsChanged: 2 });
    expect(sandbox.commitCount(remote, 'main')).toBe(commits + 1);
    const document = sandbox.files(remote, 'main')[SECRET_FILES[0]!]!;
    expect(sopsMetadataOf(document).age.map((entry) => entry.recipient)).toEqual([bob.recipient]);
    expect((await decryptWithSops(document, bob.identity))['kind']).toBe('Secret');
    const text = await runClusterstack([
      'render',
      MANIFESTS,
      '--release-source',
      RELEASES,
      '--git',
      remote,
      '--secrets',
      'encrypt',
      '--age-recipient',
      bob.recipient,
      ...FLUX,
      '--cache-dir',
      cache,
    ]);
    expect(text.stdout).toContain('Nothing changed');
    expect(text.stdout).toContain('Secrets: 2 encrypted with SOPS in 1 units, 0 of them in this run.');
    expect(sandbox.commitCount(remote, 'main')).toBe(commits + 1);
  });

  it('encrypts a file edited by hand again from the render, with a warning, never crashing', async () => {
    const document = sandbox.files(remote, 'main')[SECRET_FILES[1]!]!;
    const edited = document.replace(
      /tls\.key: ENC\[AES256_GCM,data:(.)/,
      (match, char: string) => match.slice(0, -1) + (char === 'A' ? 'B' : 'A'),
    );
    expect(edited).not.toBe(document);
    sandbox.commitFiles(remote, 'main', { [SECRET_FILES[1]!]: edited }, 'Edit a Secret by hand');
    const repaired = await render([
      '--git',
      remote,
      '--secrets',
      'encrypt',
      '--age-recipient',
      bob.recipient,
      ...FLUX,
      '--cache-dir',
      cache,
    ]);
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(repaired.report.warnings).toContainEqual(
      expect.stringContaining(
        `${SECRET_FILES[1]} was changed since clusterstack encrypted it (edited by hand?); it was encrypted again from the render`,
      ),
    );
    const now = sandbox.files(remote, 'main')[SECRET_FILES[1]!]!;
    expect(now).not.toBe(edited);
    expect((await decryptWithSops(now, bob.identity))['metadata']).toMatchObject({ name: 'hubble-server-certs' });
    // Repaired: the next run reuses it and warns no more.
    const quiet = await render([
      '--git',
      remote,
      '--secrets',
      'encrypt',
      '--age-recipient',
      bob.recipient,
      ...FLUX,
      '--cache-dir',
      cache,
    ]);
    expect(quiet.report.changed).toBe(false);
    expect(quiet.report.warnings).toEqual([]);
  });

  it('takes the recipients from the target’s .sops.yaml (first matching rule) and keeps that file', async () => {
    const sopsYaml = `creation_rules:\n  - path_regex: ^management/\n    age: ${alice.recipient}\n  - path_regex: ^clusters/.*\\.yaml$\n    age: >-\n      ${bob.recipient},${alice.recipient}\n`;
    sandbox.commitFiles(remote, 'main', { '.sops.yaml': sopsYaml }, 'Add sops configuration');
    const result = await render(['--git', remote, '--secrets', 'encrypt', ...FLUX, '--cache-dir', cache]);
    expect(result.code, result.stderr).toBe(0);
    const files = sandbox.files(remote, 'main');
    expect(files['.sops.yaml']).toBe(sopsYaml);
    const document = files[SECRET_FILES[0]!]!;
    expect(
      sopsMetadataOf(document)
        .age.map((entry) => entry.recipient)
        .sort(),
    ).toEqual([alice.recipient, bob.recipient].sort());
    for (const who of [alice, bob]) expect((await decryptWithSops(document, who.identity))['kind']).toBe('Secret');
  });
});

describe('render --secrets encrypt (bad input: clear message, nothing written)', () => {
  let recipient: string;
  beforeAll(async () => {
    recipient = (await ageKeygen(await tempDir('csk-age-'))).recipient;
  });

  async function refused(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
    const out = path.join(await tempDir(), 'out');
    const result = await render(['--output', out, ...args], env);
    await expect(stat(out)).rejects.toThrow();
    return result;
  }

  it('refuses an invalid age recipient as a bad flag (or variable) value, exit 2', async () => {
    // Change the last character (the checksum) to one it is not: the recipient is random per run.
    const broken = `${recipient.slice(0, -1)}${recipient.endsWith('x') ? 'y' : 'x'}`;
    const result = await refused(['--secrets', 'encrypt', '--age-recipient', broken]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /--age-recipient: ".*" is not a valid age recipient .*nothing was rendered or written/,
    );
    const typo = await refused(['--secrets', 'encrypt', '--age-recipient', 'age1short']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('is not an age X25519 recipient');
    const variable = await refused(['--secrets', 'encrypt'], { CLUSTERSTACK_AGE_RECIPIENTS: 'bogus' });
    expect(variable.code).toBe(2);
    expect(variable.stderr).toContain('CLUSTERSTACK_AGE_RECIPIENTS: "bogus" is not an age X25519 recipient');
  });

  it('refuses encrypt without any recipient, naming the ways to give one', async () => {
    const result = await refused(['--secrets', 'encrypt']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/--secrets encrypt needs age recipients: pass --age-recipient/);
  });

  it('refuses a .sops.yaml that does not parse, or whose rules match no Secret file', async () => {
    const broken = await writeTree({ '.sops.yaml': 'creation_rules: [\n' });
    const parse = await refused(['--secrets', 'encrypt', '--sops-config', path.join(broken, '.sops.yaml')]);
    expect(parse.code).toBe(1);
    expect(parse.stderr).toMatch(/\.sops\.yaml is not valid YAML/);
    const nomatch = await writeTree({
      '.sops.yaml': `creation_rules:\n  - path_regex: ^management/\n    age: ${recipient}\n`,
    });
    const result = await refused(['--secrets', 'encrypt', '--sops-config', path.join(nomatch, '.sops.yaml')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`no creation rule matches ${STAGE}/secret-cilium-ca.yaml`);
    const pgp = await writeTree({ '.sops.yaml': 'creation_rules:\n  - pgp: 0123456789ABCDEF\n' });
    const other = await refused(['--secrets', 'encrypt', '--sops-config', path.join(pgp, '.sops.yaml')]);
    expect(other.stderr).toContain('uses pgp; clusterstack encrypts for age recipients only');
  });

  it('refuses encrypt with Argo CD wiring, naming the alternatives', async () => {
    const result = await refused([
      '--secrets',
      'encrypt',
      '--age-recipient',
      recipient,
      '--gitops',
      'argocd',
      '--gitops-url',
      'https://git.example.test/fleet.git',
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('--secrets encrypt cannot be combined with --gitops argocd');
    expect(result.stderr).toContain('--gitops flux');
  });

  it('refuses recipients without --secrets encrypt as a usage error', async () => {
    const result = await refused(['--age-recipient', recipient]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--age-recipient only apply with --secrets encrypt');
  });

  it('takes the recipients from CLUSTERSTACK_AGE_RECIPIENTS', async () => {
    const out = path.join(await tempDir(), 'out');
    const result = await render(['--output', out, '--secrets', 'encrypt'], { CLUSTERSTACK_AGE_RECIPIENTS: recipient });
    expect(result.code, result.stderr).toBe(0);
    const document = await readFile(path.join(out, 'current', SECRET_FILES[0]!), 'utf8');
    expect(sopsMetadataOf(document).age).toEqual([expect.objectContaining({ recipient })]);
  });
});
