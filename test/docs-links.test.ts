// The README is the ten-minute read and docs/ the reference: a moved section must not leave a link
// or anchor pointing at nothing, and the README must keep the commands CI and users run.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/cli-process.js';

const DOCS = readdirSync(path.join(REPO_ROOT, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => `docs/${name}`);
const MARKDOWN = ['README.md', 'ARCHITECTURE.md', ...DOCS];

const read = (file: string): string => readFileSync(path.join(REPO_ROOT, file), 'utf8');

/** Lines outside fenced code blocks: a `# comment` in a shell block is no heading, a `](` there no link. */
function prose(text: string): string[] {
  let fenced = false;
  return text.split('\n').filter((line) => {
    if (line.startsWith('```')) fenced = !fenced;
    return !fenced && !line.startsWith('```');
  });
}

/** The anchors GitHub gives a file's headings: lower case, punctuation dropped, spaces as dashes, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const line of prose(text)) {
    const heading = /^#{1,6} (.*)$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = heading
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

/** The relative links of a markdown file (not http, not mailto), as written. */
function relativeLinks(text: string): string[] {
  return prose(text)
    .flatMap((line) => [...line.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!))
    .filter((target) => !/^[a-z]+:/i.test(target));
}

describe('the README and docs/', () => {
  it('keeps the README short enough to read in ten minutes', () => {
    expect(statSync(path.join(REPO_ROOT, 'README.md')).size).toBeLessThanOrEqual(25 * 1024);
  });

  it("keeps the quick start's two commands: the quick start itself and the test command CI runs", () => {
    const readme = read('README.md');
    const ciCommand = read('.ci/run')
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.startsWith('#') && !/^(set|cd) /.test(line));
    expect(ciCommand).toEqual(['npm ci --prefer-offline && test/install-test-deps.sh && npm test']);
    expect(readme.split('\n')).toContain(ciCommand[0]);
    expect(readme.split('\n')).toContain('npm ci && npm run quickstart');
  });

  it.each(MARKDOWN)('%s links only to files and headings that exist', (file) => {
    const broken: string[] = [];
    for (const link of relativeLinks(read(file))) {
      const [target, anchor] = link.split('#') as [string, string | undefined];
      const resolved = target === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), target));
      if (!existsSync(path.join(REPO_ROOT, resolved))) broken.push(`${link}: no file ${resolved}`);
      else if (anchor !== undefined && !anchors(read(resolved)).has(anchor))
        broken.push(`${link}: no heading #${anchor} in ${resolved}`);
    }
    expect(broken).toEqual([]);
  });

  it('links every file of docs/ from the README', () => {
    const linked = new Set(relativeLinks(read('README.md')).map((link) => link.split('#')[0]));
    expect(DOCS.filter((file) => !linked.has(file))).toEqual([]);
  });
});
