// Inputs that must never wipe the fleet: ConfigMap volumes (symbolic links) are read, an input that
// yields nothing is an error, duplicate objects are an error, and a render that would remove most
// of what is published is refused (the mass-deletion guard).
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_MANIFESTS, EXAMPLE_RELEASES, runClusterstack, tempDir } from '../support/cli.js';
import { GitSandbox } from '../support/git-repos.js';
import { copyOfSeed } from '../support/seed-copies.js';

const sandbox = new GitSandbox();
afterAll(() => sandbox.cleanup());

const STACK = readFileSync(path.join(EXAMPLE_MANIFESTS, 'clusterstack.yaml'), 'utf8');
const CLUSTERS = readFileSync(path.join(EXAMPLE_MANIFESTS, 'clusters.yaml'), 'utf8');

async function render(args: string[]): Promise<{ code: number; stderr: string; report: Record<string, any> }> {
  const result = await runClusterstack(['render', ...args, '--json']);
  return { code: result.code, stderr: result.stderr, report: result.stdout ? JSON.parse(result.stdout) : {} };
}

/** The quick start rendered to an --output directory, once for the file: the reference two cases compare with. */
let plainRender: ReturnType<typeof render> | undefined;
const plainQuickStart = (): ReturnType<typeof render> =>
  (plainRender ??= tempDir().then((dir) =>
    render([EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--output', path.join(dir, 'out')]),
  ));

/** A bare repository of its own holding the quick start as a first render publishes it (rendered once: copyOfSeed). */
function publishedQuickStart(): Promise<string> {
  return copyOfSeed('quick start in a bare repository', 'fleet.git', async (remote) => {
    sandbox.git(sandbox.root, 'init', '--quiet', '--bare', '--initial-branch=main', remote);
    expect((await render([EXAMPLE_MANIFESTS, '--release-source', EXAMPLE_RELEASES, '--git', remote])).code).toBe(0);
  });
}

/** A directory laid out as Kubernetes mounts a ConfigMap: every file a link through `..data`. */
async function configMapVolume(files: Record<string, string>): Promise<string> {
  const volume = await tempDir('csk-configmap-');
  const timestamped = path.join(volume, '..2026_11_23_10_00_00.123456789');
  mkdirSync(timestamped);
  for (const [name, content] of Object.entries(files)) {
    writeFileSync(path.join(timestamped, name), content);
    symlinkSync(`..data/${name}`, path.join(volume, name));
  }
  symlinkSync(path.basename(timestamped), path.join(volume, '..data'));
  return volume;
}

describe('inputs through symbolic links', () => {
  it('reads a ConfigMap volume like plain files, each file once', async () => {
    const volume = await configMapVolume({ 'clusterstack.yaml': STACK, 'clusters.yaml': CLUSTERS });
    const fromVolume = path.join(await tempDir(), 'out');
    const viaLinks = await render([volume, '--release-source', EXAMPLE_RELEASES, '--output', fromVolume]);
    const plain = await plainQuickStart();
    expect(viaLinks.code).toBe(0);
    expect(viaLinks.report.files.written).toEqual(plain.report.files.written);
    expect(viaLinks.report.files.written).toContain(
      'clusters/cluster-stacks/alpha/cluster-addon/daemonset-kindnet.yaml',
    );
  });

  it('reads overlapping inputs (a directory, a file in it, a link to it) once, without calling any of them empty', async () => {
    const link = path.join(await tempDir('csk-link-'), 'manifests');
    symlinkSync(EXAMPLE_MANIFESTS, link);
    const result = await render([
      EXAMPLE_MANIFESTS,
      path.join(EXAMPLE_MANIFESTS, 'clusters.yaml'),
      link,
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      path.join(await tempDir(), 'out'),
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});

describe('an input that yields nothing is an error, never an empty fleet', () => {
  let remote: string;
  let head: string;
  beforeAll(async () => {
    remote = await publishedQuickStart();
    head = sandbox.head(remote, 'main');
  });

  it.each([
    ['an empty directory', async () => tempDir('csk-empty-'), /holds no YAML files; nothing was rendered or written/],
    [
      'a directory with only empty files',
      async () => {
        const dir = await tempDir('csk-blank-');
        writeFileSync(path.join(dir, 'clusters.yaml'), '');
        writeFileSync(path.join(dir, 'stack.yaml'), '---\n# nothing yet\n');
        return dir;
      },
      /holds 2 YAML files but no Kubernetes object; nothing was rendered or written/,
    ],
    [
      'a ConfigMap volume whose data is not there',
      async () => {
        const volume = await tempDir('csk-configmap-');
        symlinkSync('..data/clusters.yaml', path.join(volume, 'clusters.yaml'));
        return volume;
      },
      /holds no YAML files/,
    ],
  ])('refuses %s and commits nothing', async (_name, make, message) => {
    const result = await render([await make(), '--release-source', EXAMPLE_RELEASES, '--git', remote]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).toMatch(/check the path \(or that the volume is mounted\)/);
    expect(sandbox.head(remote, 'main')).toBe(head);
  });

  it('refuses a wrong path', async () => {
    const result = await render([
      path.join(EXAMPLE_MANIFESTS, 'nope'),
      '--release-source',
      EXAMPLE_RELEASES,
      '--git',
      remote,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/nope: does not exist/);
    expect(sandbox.head(remote, 'main')).toBe(head);
  });

  it('refuses a second input path that is empty even when the first one is fine', async () => {
    const result = await render([
      EXAMPLE_MANIFESTS,
      await tempDir('csk-empty-'),
      '--release-source',
      EXAMPLE_RELEASES,
      '--git',
      remote,
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/csk-empty-\w+: holds no YAML files/);
    expect(sandbox.head(remote, 'main')).toBe(head);
  });
});

// Steps against one remote, in order (shuffle: false): the steps let through (--max-delete-share,
// then --allow-mass-delete) commit removals, after which the refusals before them have less to refuse.
describe('the mass-deletion guard', { shuffle: false }, () => {
  let remote: string;
  let head: string;
  beforeAll(async () => {
    remote = await publishedQuickStart();
    head = sandbox.head(remote, 'main');
  });

  it('refuses a render that removes every published cluster, naming them, and commits nothing', async () => {
    const onlyStack = await tempDir('csk-stack-');
    writeFileSync(path.join(onlyStack, 'clusterstack.yaml'), STACK);
    const result = await render([onlyStack, '--release-source', EXAMPLE_RELEASES, '--git', remote]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'this render would remove 3 of 3 published clusters (cluster-stacks/alpha, cluster-stacks/bravo, cluster-stacks/charlie)',
    );
    expect(result.stderr).toContain('--allow-mass-delete');
    expect(sandbox.head(remote, 'main')).toBe(head);
  });

  it('refuses a render that removes a whole stack’s releases', async () => {
    const otherNamespace = await tempDir('csk-moved-');
    writeFileSync(
      path.join(otherNamespace, 'all.yaml'),
      `${STACK}\n---\n${CLUSTERS}`.replaceAll('namespace: cluster-stacks', 'namespace: elsewhere'),
    );
    const result = await render([otherNamespace, '--release-source', EXAMPLE_RELEASES, '--git', remote]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /remove 3 of 3 published releases \(cluster-stacks\/docker-ferrol-1-30-v1, cluster-stacks\/docker-ferrol-1-30-v2, cluster-stacks\/docker-ferrol-1-30-v3\), leaving their stacks without any release and 3 of 3 published clusters/,
    );
    expect(sandbox.head(remote, 'main')).toBe(head);
  });

  it('refuses more than 50% by default, and lets it through with a higher --max-delete-share', async () => {
    const manifests = await tempDir('csk-two-');
    await cp(EXAMPLE_MANIFESTS, manifests, { recursive: true });
    // alpha and bravo go: two of three published clusters, over the default 50%.
    writeFileSync(
      path.join(manifests, 'clusters.yaml'),
      CLUSTERS.split(/^---$/m)
        .filter((doc) => !/name: (alpha|bravo)\n/.test(doc))
        .join('---'),
    );
    const refused = await render([manifests, '--release-source', EXAMPLE_RELEASES, '--git', remote]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('2 of 3 published clusters (cluster-stacks/alpha, cluster-stacks/bravo)');
    expect(refused.stderr).toContain('more than the 50% one render may remove');
    const allowed = await render([
      manifests,
      '--release-source',
      EXAMPLE_RELEASES,
      '--git',
      remote,
      '--max-delete-share',
      '70%',
    ]);
    expect(allowed.code).toBe(0);
    expect(allowed.report.files.removed).toContain(
      'clusters/cluster-stacks/alpha/cluster-addon/daemonset-kindnet.yaml',
    );
  });

  it('publishes the removal of everything with --allow-mass-delete', async () => {
    const onlyStack = await tempDir('csk-stack-');
    writeFileSync(path.join(onlyStack, 'clusterstack.yaml'), STACK);
    const result = await render([
      onlyStack,
      '--release-source',
      EXAMPLE_RELEASES,
      '--git',
      remote,
      '--allow-mass-delete',
    ]);
    expect(result.code).toBe(0);
    expect(result.report.changed).toBe(true);
    expect(Object.keys(sandbox.files(remote, 'main')).some((file) => file.startsWith('clusters/'))).toBe(false);
  });
});

describe('duplicate objects', () => {
  it('refuses two Clusters with one namespace and name, naming both files and lines, and writes nothing', async () => {
    const dir = await tempDir('csk-dup-');
    writeFileSync(path.join(dir, 'a-stack.yaml'), STACK);
    writeFileSync(path.join(dir, 'b-clusters.yaml'), CLUSTERS);
    const alpha = CLUSTERS.split(/^---$/m).find((doc) => /name: alpha\n/.test(doc))!;
    writeFileSync(path.join(dir, 'c-more.yaml'), `# another team's copy\n---${alpha}`);
    const out = path.join(await tempDir(), 'out');
    const result = await render([dir, '--release-source', EXAMPLE_RELEASES, '--output', out]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /b-clusters\.yaml:\d+ Cluster\.cluster\.x-k8s\.io cluster-stacks\/alpha: is defined again at .*c-more\.yaml:3; every object may appear once in the inputs/,
    );
    expect(() => readFileSync(path.join(out, 'current', 'README.md'))).toThrow();
  });
});

describe('inputs as Kubernetes reads them: what it refuses stops the render, what it reads is read', () => {
  let remote: string;
  let head: string;
  beforeAll(async () => {
    remote = await publishedQuickStart();
    head = sandbox.head(remote, 'main');
  });

  /** The quickstart inputs with clusters.yaml replaced by `clusters` (text or bytes). */
  async function inputsWith(clusters: string | Buffer): Promise<string> {
    const dir = await tempDir('csk-accept-');
    writeFileSync(path.join(dir, 'clusterstack.yaml'), STACK);
    writeFileSync(path.join(dir, 'clusters.yaml'), clusters);
    return dir;
  }

  it('refuses an input file with invalid UTF-8, naming the file, line and byte, and commits nothing', async () => {
    const at = CLUSTERS.indexOf('name: bravo') + 'name: bra'.length;
    const broken = Buffer.concat([
      Buffer.from(CLUSTERS.slice(0, at)),
      Buffer.from([0xe9]),
      Buffer.from(CLUSTERS.slice(at + 1)),
    ]);
    const line = CLUSTERS.slice(0, at).split('\n').length;
    const result = await render([await inputsWith(broken), '--release-source', EXAMPLE_RELEASES, '--git', remote]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(
        `clusters\\.yaml:${line}: is not text Kubernetes reads: invalid trailing UTF-8 octet at byte offset ${at + 1} \\(line ${line}\\); Kubernetes refuses such a file\\. Save it as UTF-8`,
      ),
    );
    expect(result.stderr).toContain('nothing was rendered or written');
    expect(sandbox.head(remote, 'main')).toBe(head);
  });

  it.each([
    [
      'Alpha_One',
      (text: string) => text.replace('name: alpha\n', 'name: Alpha_One\n'),
      /clusters\.yaml:14 Cluster metadata\.name: "Alpha_One" is not a valid Cluster name: it must be an RFC 1123 subdomain .*; Cluster API refuses it\. Rename it/,
    ],
    [
      '../../escape',
      (text: string) => text.replace('name: alpha\n', 'name: ../../escape\n'),
      /clusters\.yaml:14 Cluster metadata\.name: "\.\.\/\.\.\/escape" is not a valid Cluster name/,
    ],
    [
      'a namespace ../..',
      (text: string) => text.replace('name: alpha\n  namespace: cluster-stacks\n', 'name: alpha\n  namespace: ../..\n'),
      /clusters\.yaml:15 Cluster metadata\.namespace: "\.\.\/\.\." is not a valid namespace: it must be an RFC 1123 label/,
    ],
    [
      'a 300-character name',
      (text: string) => text.replace('name: alpha\n', `name: ${'a'.repeat(300)}\n`),
      /clusters\.yaml:14 Cluster metadata\.name: "a{300}" is not a valid Cluster name: it is 300 characters long, over the 63 Cluster API allows/,
    ],
  ])(
    'refuses a Cluster named %s at read time (exit 1, file, line, field and value) and commits nothing',
    async (_name, edit, message) => {
      const result = await render([
        await inputsWith(edit(CLUSTERS)),
        '--release-source',
        EXAMPLE_RELEASES,
        '--git',
        remote,
      ]);
      expect(result.stderr).toMatch(message);
      expect(result.code).toBe(1);
      expect(sandbox.head(remote, 'main')).toBe(head);
    },
  );

  it('reads UTF-16 (either byte order) and UTF-8 with a byte order mark as the same inputs', async () => {
    const utf16 = (bigEndian: boolean): Buffer => {
      const units = Buffer.from(CLUSTERS, 'utf16le');
      return Buffer.concat([Buffer.from(bigEndian ? [0xfe, 0xff] : [0xff, 0xfe]), bigEndian ? units.swap16() : units]);
    };
    const plain = await plainQuickStart();
    for (const encoded of [
      utf16(false),
      utf16(true),
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(CLUSTERS)]),
    ]) {
      const out = path.join(await tempDir(), 'out');
      const result = await render([await inputsWith(encoded), '--release-source', EXAMPLE_RELEASES, '--output', out]);
      expect(result.code).toBe(0);
      expect(result.report.files.written).toEqual(plain.report.files.written);
      expect(
        readFileSync(
          path.join(out, 'current', 'clusters/cluster-stacks/alpha/cluster-addon/daemonset-kindnet.yaml'),
          'utf8',
        ),
      ).toContain('kindnet');
    }
  });

  it('reads a Cluster nested hundreds of levels deep, and refuses one past the limit naming it, writing nothing', async () => {
    const withVariable = (depth: number): string =>
      CLUSTERS.replace(
        '    class: docker-ferrol-1-30-v1\n',
        `    class: docker-ferrol-1-30-v1\n    variables:\n    - name: deep\n      value: ${'['.repeat(depth)}${']'.repeat(depth)}\n`,
      );
    const accepted = await render([
      await inputsWith(withVariable(900)),
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      path.join(await tempDir(), 'out'),
    ]);
    expect(accepted.stderr).toBe('');
    expect(accepted.code).toBe(0);
    const out = path.join(await tempDir(), 'out');
    const refused = await render([
      await inputsWith(withVariable(5000)),
      '--release-source',
      EXAMPLE_RELEASES,
      '--output',
      out,
    ]);
    expect(refused.code).toBe(1);
    // In-process there is no deep-stack rerun (the clusterstack command does it: deep-nesting.test.ts).
    expect(refused.stderr).toMatch(
      /clusters\.yaml:\d+: nests collections more than 1000 levels deep; Kubernetes reads up to 10000, and reading it needs a thread with a deep stack/,
    );
    expect(() => readFileSync(path.join(out, 'current', 'README.md'))).toThrow();
  });
});
