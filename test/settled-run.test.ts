// A render whose inputs, releases, options and tool versions are those of the last settled run, on a
// target that provably still holds what that run left, ends without rendering ("nothing changed",
// `noop` in --json) — and every way that can stop being true leads to a real render: a hand edit,
// an added or removed file, a changed input, release or flag, another helm, a withheld unit (tried
// again on every run), a staged change, a foreign commit or push. Real helm, real git, the CLI.
import { appendFile, chmod, copyFile, readFile, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DirectoryPublisher } from '../gitops/directory-publisher.js';
import { resolveHelmBinary } from '../renderers/helm-binary.js';
import type { Plan } from '../src/plan/build-plan.js';
import { planMaterial, runFingerprint } from '../src/pipeline/run-fingerprint.js';
import {
  clusterYaml,
  copyExampleReleases,
  EXAMPLE_MANIFESTS,
  EXAMPLE_RELEASES,
  FERROL_STACK_YAML,
  readTree,
  renderWithReport,
  runClusterstack,
  tempDir,
  writeTree,
} from './support/cli.js';
import { GitSandbox } from './support/git-repos.js';
import { ageKeygen } from './support/sops-oracle.js';

const sandbox = new GitSandbox();
afterAll(() => sandbox.cleanup());

const render = renderWithReport;

const cluster = (name: string, host?: string): string => clusterYaml(name, 'docker-ferrol-1-30-v1', host);

/** Two clusters on the example's v1 release: nothing withheld, nothing to warn about. */
async function fleet(hosts: { alpha?: string; bravo?: string } = {}): Promise<string> {
  return writeTree({ 'fleet.yaml': FERROL_STACK_YAML + cluster('alpha', hosts.alpha) + cluster('bravo', hosts.bravo) });
}

const unitFile = (tree: Record<string, string>): string =>
  Object.keys(tree).find(
    (file) => file.startsWith('clusters/cluster-stacks/alpha/') && !file.endsWith('kustomization.yaml'),
  )!;

describe('a render that changes nothing, into a directory', () => {
  it('ends without rendering after a settled run, says so, and a forced full render agrees that nothing changed', async () => {
    const inputs = await fleet();
    const out = path.join(await tempDir(), 'out');
    const args = [inputs, '--release-source', EXAMPLE_RELEASES, '--output', out];
    const first = await render(args);
    expect(first.code).toBe(0);
    expect(first.report.noop).toBeUndefined();
    expect(first.report.withheld).toEqual([]);
    const tree = await readTree(path.join(out, 'current'));

    const second = await render(args);
    expect(second.code).toBe(0);
    expect(second.report).toMatchObject({
      changed: false,
      commit: null,
      summary: 'nothing changed',
      helmProcesses: 0,
      withheld: [],
      files: { written: [], removed: [] },
    });
    expect(second.report.noop.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    // Same shape as a rendering no-op: every unit counted as reused.
    expect(second.report.units).toEqual({
      rendered: 0,
      reused: first.report.units.rendered + first.report.units.reused,
    });
    expect(await readTree(path.join(out, 'current'))).toEqual(tree);

    // The shortcut only ever stands in for a render that would change nothing.
    const full = await render([...args, '--full-render']);
    expect(full.report).toMatchObject({ changed: false, helmProcesses: 0 });
    expect(full.report.noop).toBeUndefined();
    expect(full.report.units).toEqual(second.report.units);

    const text = await runClusterstack(['render', ...args]);
    expect(text.stdout).toContain('Nothing changed');
    expect(text.stdout).toContain('Not rendered again');
  });

  it('renders again after a hand edit, an added file or a removed file in the tree, and puts the tree back where a render does', async () => {
    const inputs = await fleet();
    const out = path.join(await tempDir(), 'out');
    const args = [inputs, '--release-source', EXAMPLE_RELEASES, '--output', out];
    await render(args);
    const tree = await readTree(path.join(out, 'current'));
    expect((await render(args)).report.noop).toBeDefined();

    // A generated file edited by hand: the render writes it again.
    await appendFile(path.join(out, 'current', 'README.md'), '\nhand edit\n');
    const afterEdit = await render(args);
    expect(afterEdit.report.noop).toBeUndefined();
    expect(afterEdit.report).toMatchObject({ changed: true, files: { written: ['README.md'] } });
    expect(await readTree(path.join(out, 'current'))).toEqual(tree);
    expect((await render(args)).report.noop).toBeDefined();

    // A file of a unit removed: the unit renders again.
    const removed = unitFile(tree);
    await unlink(path.join(out, 'current', removed));
    const afterRemoval = await render(args);
    expect(afterRemoval.report.noop).toBeUndefined();
    expect(afterRemoval.report.changed).toBe(true);
    expect(afterRemoval.report.units.rendered).toBeGreaterThan(0);
    expect(await readTree(path.join(out, 'current'))).toEqual(tree);
    expect((await render(args)).report.noop).toBeDefined();

    // A file added inside the tree: the render's tree has no such file.
    await writeFile(path.join(out, 'current', 'clusters', 'stray.yaml'), 'kind: ConfigMap\n');
    const afterAdding = await render(args);
    expect(afterAdding.report.noop).toBeUndefined();
    expect(afterAdding.report).toMatchObject({ changed: true, files: { removed: ['clusters/stray.yaml'] } });
    expect(await readTree(path.join(out, 'current'))).toEqual(tree);

    // A unit's file edited in place (same size, so only its times tell): a render reads the tree again.
    expect((await render(args)).report.noop).toBeDefined();
    const edited = path.join(out, 'current', unitFile(tree));
    const text = await readFile(edited, 'utf8');
    await writeFile(edited, text.replace(/a/, 'b'));
    expect((await render(args)).report.noop).toBeUndefined();
  });

  it('renders again when an input, the release or an option changes, or another helm would run', async () => {
    const releases = await copyExampleReleases();
    const inputs = await fleet();
    const out = path.join(await tempDir(), 'out');
    const args = [inputs, '--release-source', releases, '--output', out];
    await render(args);
    expect((await render(args)).report.noop).toBeDefined();

    // An input: bravo's endpoint moves.
    await writeFile(
      path.join(inputs, 'fleet.yaml'),
      FERROL_STACK_YAML + cluster('alpha') + cluster('bravo', '10.9.9.9'),
    );
    const changedInput = await render(args);
    expect(changedInput.report.noop).toBeUndefined();
    expect(changedInput.report.changed).toBe(true);
    expect(changedInput.report.units.rendered).toBeGreaterThan(0);
    expect((await render(args)).report.noop).toBeDefined();

    // The release's content (a file its digest covers), same tag.
    await appendFile(path.join(releases, 'docker-ferrol-1-30-v1', 'metadata.yaml'), '\n# touched\n');
    const changedRelease = await render(args);
    expect(changedRelease.report.noop).toBeUndefined();
    expect((await render(args)).report.noop).toBeDefined();

    // An option that changes the output: the Flux wiring.
    const flux = [...args, '--gitops', 'flux', '--gitops-url', 'https://git.example.test/fleet.git'];
    const withFlux = await render(flux);
    expect(withFlux.report.noop).toBeUndefined();
    expect(withFlux.report.changed).toBe(true);
    expect((await render(flux)).report.noop).toBeDefined();
    // The secrets policy is part of every unit's digest: another one renders.
    expect((await render([...flux, '--secrets', 'drop'])).report.noop).toBeUndefined();
    expect((await render([...flux, '--secrets', 'drop'])).report.noop).toBeDefined();

    // Another helm binary (a copy elsewhere, as an upgrade would bring): the run renders.
    const helm = path.join(await tempDir(), 'helm');
    await copyFile((await resolveHelmBinary({})).path, helm);
    await chmod(helm, 0o755);
    const otherHelm = await render([...flux, '--secrets', 'drop', '--helm', helm]);
    expect(otherHelm.code).toBe(0);
    expect(otherHelm.report.noop).toBeUndefined();
  });

  it('never skips a run that withheld something: the withheld unit is tried again every run, until it renders', async () => {
    const out = path.join(await tempDir(), 'out');
    // The quick start withholds delta (no controlPlaneEndpoint yet).
    const args = [EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--output', out];
    for (let run = 0; run < 3; run += 1) {
      const result = await render(args);
      expect(result.code).toBe(0);
      expect(result.report.noop).toBeUndefined();
      expect(result.report.withheld.map((entry: { name: string }) => entry.name)).toContain('delta');
    }

    // A settled fleet whose cluster starts failing: withheld with its previous output kept, tried again each run.
    const inputs = await fleet();
    const fleetOut = path.join(await tempDir(), 'out');
    const fleetArgs = [inputs, '--release-source', EXAMPLE_RELEASES, '--output', fleetOut];
    await render(fleetArgs);
    expect((await render(fleetArgs)).report.noop).toBeDefined();
    await writeFile(
      path.join(inputs, 'fleet.yaml'),
      FERROL_STACK_YAML + cluster('alpha') + cluster('bravo').replace(/ {2}controlPlaneEndpoint: .*\n/, ''),
    );
    for (let run = 0; run < 2; run += 1) {
      const result = await render(fleetArgs);
      expect(result.report.noop).toBeUndefined();
      expect(result.report.withheld).toEqual([expect.objectContaining({ name: 'bravo', previousOutputKept: true })]);
    }
    await writeFile(path.join(inputs, 'fleet.yaml'), FERROL_STACK_YAML + cluster('alpha') + cluster('bravo'));
    const healed = await render(fleetArgs);
    expect(healed.report.noop).toBeUndefined();
    expect(healed.report.withheld).toEqual([]);
    expect((await render(fleetArgs)).report.noop).toBeDefined();
  });

  it('with --secrets encrypt: skips while the recipients stay, renders for new recipients and after a hand edit of an encrypted Secret', async () => {
    const manifests = path.resolve('examples/sops-secrets/manifests');
    const releases = path.resolve('examples/sops-secrets/releases');
    const out = path.join(await tempDir(), 'out');
    const keys = await tempDir();
    const [first, second] = [await ageKeygen(keys, 'first.key'), await ageKeygen(keys, 'second.key')];
    const args = [manifests, '--release-source', releases, '--output', out, '--secrets', 'encrypt'];
    const initial = await render([...args, '--age-recipient', first.recipient]);
    expect(initial.code).toBe(0);
    expect(initial.report.secrets.encryptedInThisRun).toBeGreaterThan(0);
    const skipped = await render([...args, '--age-recipient', first.recipient]);
    expect(skipped.report.noop).toBeDefined();
    // As a rendering no-op reports it: the same Secrets, none encrypted in this run.
    expect(skipped.report.secrets).toMatchObject({ total: initial.report.secrets.total, encryptedInThisRun: 0 });

    const rotated = await render([...args, '--age-recipient', second.recipient]);
    expect(rotated.report.noop).toBeUndefined();
    expect(rotated.report.secrets.recipientsChanged).toBeGreaterThan(0);
    expect((await render([...args, '--age-recipient', second.recipient])).report.noop).toBeDefined();

    const tree = await readTree(path.join(out, 'current'));
    const secret = Object.keys(tree).find((file) => /\/secret-[^/]+\.yaml$/.test(file))!;
    await writeFile(path.join(out, 'current', secret), tree[secret]!.replace('sops:', 'sops:  '));
    const afterEdit = await render([...args, '--age-recipient', second.recipient]);
    expect(afterEdit.report.noop).toBeUndefined();
    expect(afterEdit.report.warnings.join('\n')).toContain('edited by hand');
  });
});

describe('DirectoryPublisher.hasSettledRun', () => {
  it('is false until a settled run is recorded and after it is forgotten, so a run that finds it false renders for sure', async () => {
    const out = path.join(await tempDir(), 'out');
    const publisher = new DirectoryPublisher(out);
    expect(await publisher.hasSettledRun()).toBe(false);
    const lock = await publisher.lock({ timeoutMs: 1000, command: 'test' });
    try {
      await publisher.publish(new Map([['README.md', 'hello\n']]));
      expect(await publisher.hasSettledRun()).toBe(false);
      await publisher.recordSettledRun({ fingerprint: 'sha256:one', report: {} });
      expect(await publisher.hasSettledRun()).toBe(true);
      // It takes no proof: a hand edit leaves the record, which readSettledRun then refuses.
      await writeFile(path.join(out, 'current', 'README.md'), 'edited\n');
      expect(await publisher.hasSettledRun()).toBe(true);
      expect(await publisher.readSettledRun('sha256:one')).toBeUndefined();
      await publisher.forgetSettledRun();
      expect(await publisher.hasSettledRun()).toBe(false);
    } finally {
      await lock.release();
    }
    // A directory that is not ours has no record of ours.
    const foreign = await writeTree({ 'notes.txt': 'mine\n' });
    expect(await new DirectoryPublisher(foreign).hasSettledRun()).toBe(false);
  });
});

describe('a render that changes nothing, into Git', () => {
  it('in place: skips while HEAD holds the settled tree and nothing under the path changed; a hand edit, a commit there or a staged change renders', async () => {
    const inputs = await fleet();
    const repo = path.join(await tempDir(), 'gitops-repo');
    const args = [inputs, '--release-source', EXAMPLE_RELEASES, '--git', repo, '--path', 'rendered'];
    expect((await render(args)).report.changed).toBe(true);
    const skipped = await render(args);
    expect(skipped.report).toMatchObject({ changed: false, commit: null });
    expect(skipped.report.noop).toBeDefined();

    // A commit outside the path leaves the tree under it as it was: still nothing to render.
    await writeFile(path.join(repo, 'NOTES.md'), 'notes\n');
    sandbox.git(repo, 'add', 'NOTES.md');
    sandbox.git(repo, 'commit', '--quiet', '-m', 'notes');
    expect((await render(args)).report.noop).toBeDefined();

    // An uncommitted hand edit under the path: the shortcut does not hide it; the render refuses to
    // overwrite it, and with --force puts the file back, committing nothing.
    const readme = path.join(repo, 'rendered', 'README.md');
    const original = await readFile(readme, 'utf8');
    await appendFile(readme, 'hand edit\n');
    const refused = await render(args);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('uncommitted edits to files the render writes (rendered/README.md)');
    expect(await readFile(readme, 'utf8')).toBe(`${original}hand edit\n`);
    const afterEdit = await render([...args, '--force']);
    expect(afterEdit.report.noop).toBeUndefined();
    expect(afterEdit.report.changed).toBe(false);
    expect(await readFile(readme, 'utf8')).toBe(original);
    expect((await render(args)).report.noop).toBeDefined();

    // A hand commit under the path: HEAD's tree there is no longer the settled one.
    await appendFile(readme, 'committed edit\n');
    sandbox.git(repo, 'commit', '--quiet', '-am', 'edit the rendered README');
    const afterCommit = await render(args);
    expect(afterCommit.report.noop).toBeUndefined();
    expect(afterCommit.report.changed).toBe(true);
    expect(await readFile(readme, 'utf8')).toBe(original);

    // Staged work anywhere: the render refuses to commit over it, and the shortcut must not hide that.
    expect((await render(args)).report.noop).toBeDefined();
    const head = sandbox.git(repo, 'rev-parse', 'HEAD');
    await writeFile(path.join(repo, 'NOTES.md'), 'staged\n');
    sandbox.git(repo, 'add', 'NOTES.md');
    const staged = await render(args);
    expect(staged.code).not.toBe(0);
    expect(staged.stderr).toContain('staged changes');
    expect(sandbox.git(repo, 'rev-parse', 'HEAD')).toBe(head);
  });

  it('against a remote: skips while the branch head is the settled commit; a push by anyone else renders', async () => {
    const inputs = await fleet();
    const remote = sandbox.bareRepo('settled');
    const args = [inputs, '--release-source', EXAMPLE_RELEASES, '--git', remote];
    const first = await render(args);
    expect(first.report.changed).toBe(true);
    const skipped = await render(args);
    expect(skipped.report.noop).toBeDefined();
    expect(sandbox.git(remote, 'rev-parse', 'main')).toBe(first.report.commit);

    sandbox.commitFiles(remote, 'main', { 'clusters/stray.yaml': 'kind: ConfigMap\n' }, 'someone else');
    const afterPush = await render(args);
    expect(afterPush.report.noop).toBeUndefined();
    expect(afterPush.report).toMatchObject({ changed: true, files: { removed: ['clusters/stray.yaml'] } });
    expect((await render(args)).report.noop).toBeDefined();
    // Another path in the same repository is another target: it renders.
    expect((await render([...args, '--path', 'other'])).report.noop).toBeUndefined();
  });
});

describe('runFingerprint', () => {
  const material = {
    tool: { version: '1.0.0', code: ['src sha256:a'] },
    helm: { candidates: [] },
    plan: { releases: new Map([['ns/v1', { digest: 'sha256:1' }]]) },
    options: { secrets: 'refuse' },
    target: '/out',
  };

  it('changes with our version, helm, the plan, the options and the target, and not with key order', () => {
    const base = runFingerprint(material);
    expect(base).toMatch(/^sha256:/);
    expect(runFingerprint({ ...material, options: { secrets: 'refuse' } })).toBe(base);
    for (const changed of [
      { ...material, tool: { ...material.tool, version: '1.0.1' } },
      { ...material, helm: { candidates: [['path', '/usr/bin/helm', '1:2:3']] } },
      { ...material, plan: { releases: new Map([['ns/v1', { digest: 'sha256:2' }]]) } },
      { ...material, options: { secrets: 'drop' } },
      { ...material, target: '/other' },
    ]) {
      expect(runFingerprint(changed)).not.toBe(base);
    }
  });

  it('gives none for what it cannot digest faithfully: such a run renders', () => {
    expect(runFingerprint({ ...material, options: { onProgress: () => undefined } })).toBeUndefined();
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(runFingerprint({ ...material, plan: cyclic })).toBeUndefined();
    class Client {
      token = 'x';
    }
    expect(runFingerprint({ ...material, plan: { client: new Client() } })).toBeUndefined();
  });

  it('digests a plan with Cluster API providers, leaving out only their fetcher (a capability, not data)', () => {
    const fetcher = { versions: async () => [], fetch: async () => ({}) };
    const plan = {
      inputs: {},
      releases: new Map(),
      problems: [],
      warnings: [],
      providers: {
        providers: [{ dir: 'management/providers/coreprovider-cluster-api', version: 'v1.8.0' }],
        problems: [],
        fetcher,
        inputs: [],
      },
    } as unknown as Plan;
    expect(runFingerprint({ ...material, plan })).toBeUndefined();
    const described = runFingerprint({ ...material, plan: planMaterial(plan) });
    expect(described).toMatch(/^sha256:/);
    const other = {
      ...plan,
      providers: {
        ...plan.providers!,
        providers: [{ dir: 'management/providers/coreprovider-cluster-api', version: 'v1.9.0' }],
      },
    } as unknown as Plan;
    expect(runFingerprint({ ...material, plan: planMaterial(other) })).not.toBe(described);
  });
});
