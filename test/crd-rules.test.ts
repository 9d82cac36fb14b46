// The CRDs' CEL rules as the one source of what they say: every rule an input can be checked
// against is evaluated (src/api/crd-rules.ts), refusals reach the person through the CLI with file,
// line, field and the CRD's message, verdicts are remembered (crd-rule-verdicts.ts), and no rule is
// said again by hand in src/.
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { crdRules } from '../src/api/crd-rules.js';
import { CRD_RULE_VERDICTS_FILE, CrdRuleVerdicts, readCrdTexts } from '../src/inputs/crd-rule-verdicts.js';
import { runClusterstack } from './support/cli.js';
import { celRules, isTransitionRule, loadCrd, versionSchema } from './support/crd-schema.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CRD_DIR = path.join(ROOT, 'crds');
const EXAMPLE_RELEASES = path.join(ROOT, 'examples', 'quickstart', 'releases');

const STACK = (spec: string): string => `apiVersion: clusterstack.x-k8s.io/v1alpha1
kind: ClusterStack
metadata:
  name: ferrol
  namespace: default
spec:
${spec}`;
const VALID = {
  provider: 'provider: docker',
  name: 'name: ferrol',
  kubernetesVersion: 'kubernetesVersion: "1.30"',
  providerRef: 'noProvider: true',
};
const specOf = (fields: Partial<Record<string, string>>): string =>
  Object.values({ ...VALID, ...fields })
    .filter((line): line is string => line !== undefined)
    .map((line) => `  ${line}`)
    .join('\n');

describe('the CRD rules evaluated on inputs', () => {
  const rules = crdRules(readCrdTexts());

  it('are every rule of the CRDs an input can be checked against (all but transition rules), each evaluated in one place', () => {
    const inCrds = (['clusterstacks', 'clusterstackreleases', 'clusteraddons'] as const).flatMap((plural) => {
      const crd = loadCrd(path.join(CRD_DIR, `clusterstack.x-k8s.io_${plural}.yaml`));
      return celRules(versionSchema(crd, 'v1alpha1'))
        .filter((rule) => !isTransitionRule(rule))
        .map((rule) => `${crd.spec.names.kind} ${rule.path} ${rule.rule}`);
    });
    expect(rules.map((rule) => `${rule.kind} ${rule.at.map((name) => `.${name}`).join('')} ${rule.rule}`)).toEqual(
      inCrds,
    );
    // The four rules of today, so that a new one is looked at (and given a CLI test below).
    expect(rules.map((rule) => [rule.kind, rule.at.join('.'), rule.fieldPath])).toEqual([
      ['ClusterStack', 'spec', '.providerRef'],
      ['ClusterStack', 'spec', undefined],
      ['ClusterStack', 'spec', '.versions'],
      ['ClusterStack', 'spec.channel', undefined],
    ]);
  });

  it("are not said again by hand: no source file holds a rule's message or its constants", async () => {
    const sources: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        if (entry.isDirectory()) await walk(path.join(dir, entry.name));
        // The releases command checks its --channel flag (a command-line value, exit 2) before any object exists.
        else if (entry.name.endsWith('.ts') && entry.name !== 'releases-command.ts')
          sources.push(await readFile(path.join(dir, entry.name), 'utf8'));
      }
    };
    await walk(path.join(ROOT, 'src'));
    const said = [
      'providerRef is required unless',
      'Helm limits to 53',
      '<= 51',
      'channel, but this ClusterStack follows',
      'must be stable, custom or a pre-release',
      '^[a-z][a-z0-9]*$',
    ];
    expect(said.filter((text) => sources.some((source) => source.includes(text)))).toEqual([]);
  });
});

describe("clusterstack render refuses what the CRD rules refuse (exit 1), naming file, the field's line (its parent's when it is missing), field and the CRD's message, and writes nothing", () => {
  it.each([
    [
      'providerRef missing without noProvider',
      { providerRef: undefined },
      6,
      'spec.providerRef',
      /providerRef is required unless noProvider is true: point it at the <Provider>ClusterStackReleaseTemplate/,
    ],
    [
      'provider, name and kubernetesVersion over 51 characters (Helm release names)',
      { name: `name: ${'f'.repeat(44)}` },
      6,
      'spec',
      /together form the release name <provider>-<name>-<major>-<minor>, which Helm limits to 53 characters: use a shorter provider or name/,
    ],
    [
      'a channel that is no channel name',
      { channel: 'channel: 1beta' },
      11,
      'spec.channel',
      /must be stable, custom or a pre-release channel name such as alpha, found "1beta"/,
    ],
    [
      'a version of another channel',
      { versions: 'versions: [v1, v2-alpha.1]' },
      11,
      'spec.versions',
      /v2-alpha\.1 belongs to the alpha channel, but this ClusterStack follows stable; list only stable versions or change spec\.channel/,
    ],
  ])('%s', async (_label, fields, line, field, message) => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'csk-crd-rules-'));
    await writeFile(path.join(dir, 'stack.yaml'), `${STACK(specOf(fields))}\n`);
    const cache = path.join(dir, 'cache');
    const out = path.join(os.tmpdir(), `${path.basename(dir)}-out`);
    const result = await runClusterstack(['render', dir, '--release-source', EXAMPLE_RELEASES, '--output', out], {
      env: { CLUSTERSTACK_CACHE_DIR: cache },
    });
    expect(result.code, result.stderr).toBe(1);
    expect(`${result.stdout}${result.stderr}`).toMatch(
      new RegExp(`stack\\.yaml:${line} ClusterStack default/ferrol ${field.replace('.', '\\.')}: .*${message.source}`),
    );
    // Nothing is written: no output directory, and the input is untouched.
    await expect(readdir(out)).rejects.toThrow(/ENOENT/);
    expect((await readdir(dir)).filter((name) => name !== 'cache')).toEqual(['stack.yaml']);
  });

  it('admits 51 characters exactly', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'csk-crd-rules-'));
    // docker (6) + 41 + 1.30 (4) = 51
    await writeFile(path.join(dir, 'stack.yaml'), `${STACK(specOf({ name: `name: ${'f'.repeat(41)}` }))}\n`);
    const result = await runClusterstack(['plan', dir, '--release-source', EXAMPLE_RELEASES], {
      env: { CLUSTERSTACK_CACHE_DIR: path.join(dir, 'cache') },
    });
    expect(result.stdout).toMatch(/ferrol/);
    expect(result.stdout + result.stderr).not.toMatch(/Helm limits to 53/);
  });
});

describe('CrdRuleVerdicts', () => {
  const stack = {
    apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
    kind: 'ClusterStack',
    metadata: { name: 'a' },
    spec: { provider: 'docker', name: 'ferrol', kubernetesVersion: '1.30' },
  };

  it('remembers verdicts across runs for the same CRDs, and not for changed ones', async () => {
    const cache = await mkdtemp(path.join(os.tmpdir(), 'csk-crd-verdicts-'));
    const texts = readCrdTexts();
    const first = await CrdRuleVerdicts.open(cache, texts);
    const problems = first.check('ClusterStack', stack);
    expect(problems).toEqual([
      { path: 'spec.providerRef', message: expect.stringMatching(/^providerRef is required/) },
    ]);
    await first.save();
    const stored = JSON.parse(await readFile(path.join(cache, CRD_RULE_VERDICTS_FILE), 'utf8')) as {
      verdicts: [string, unknown][];
    };
    expect(stored.verdicts).toHaveLength(1);
    // A second run answers from the file, so it has nothing to write.
    const before = await readFile(path.join(cache, CRD_RULE_VERDICTS_FILE), 'utf8');
    const again = await CrdRuleVerdicts.open(cache, texts);
    expect(again.check('ClusterStack', stack)).toEqual(problems);
    await writeFile(path.join(cache, CRD_RULE_VERDICTS_FILE), before.replace('"schema"', '"schema" '));
    await again.save();
    expect(await readFile(path.join(cache, CRD_RULE_VERDICTS_FILE), 'utf8')).toBe(
      before.replace('"schema"', '"schema" '),
    );
    // Another CRD text is another rule set: the kept verdicts are not used.
    const changed = await CrdRuleVerdicts.open(
      cache,
      texts.map((text) => `${text}# changed\n`),
    );
    expect(changed.check('ClusterStack', { ...stack, spec: { ...stack.spec, noProvider: true } })).toEqual([]);
  });

  it('ignores a kept file that does not verify', async () => {
    const cache = await mkdtemp(path.join(os.tmpdir(), 'csk-crd-verdicts-'));
    const texts = readCrdTexts();
    const first = await CrdRuleVerdicts.open(cache, texts);
    first.check('ClusterStack', stack);
    await first.save();
    const file = path.join(cache, CRD_RULE_VERDICTS_FILE);
    await writeFile(file, (await readFile(file, 'utf8')).replace('providerRef is required', 'all is well'));
    expect((await CrdRuleVerdicts.open(cache, texts)).check('ClusterStack', stack)[0]?.message).toMatch(
      /^providerRef is required/,
    );
  });
});
