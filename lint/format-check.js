// `npm run format:check`: Prettier's check of the files `npm run format` writes, with a cache kept per
// machine. Prettier's own --cache cannot serve a second clone: it keys each entry by the file's
// absolute path and a hash of its options, which hold that path too, so every clean clone (CI's
// `.ci/run`) checked every file from cold, about 15 CPU-s. This cache keys a file by what decides
// its check: Prettier's version, the options resolved for it (its path made relative to the clone)
// and its content. Only a file that passed is kept, so a file that fails is checked, and reported,
// on every run: the cache saves work, never a finding.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import console from 'node:console';
import process from 'node:process';
import * as prettier from 'prettier';

// The files of `npm run format` ("{src,renderers,gitops,test,lint}/**/*.{ts,js}" "*.{ts,js}"), as
// Git pathspecs: tracked files and new ones Git does not ignore, as Prettier's glob finds them.
const PATHSPECS = [
  ...['src', 'renderers', 'gitops', 'test', 'lint'].flatMap((dir) => [
    `:(glob)${dir}/**/*.ts`,
    `:(glob)${dir}/**/*.js`,
  ]),
  ':(glob)*.ts',
  ':(glob)*.js',
];
const CACHE_FILE = path.join(
  process.env.CLUSTERSTACK_LINT_CACHE ?? path.join(os.homedir(), '.cache', 'clusterstack-gitops', 'lint'),
  `prettier-checked-${prettier.version}`,
);

/** The keys of the files that passed in earlier runs on this machine (none when there is no usable cache: every file is checked). */
function readPassed() {
  try {
    return new Set(JSON.parse(readFileSync(CACHE_FILE, 'utf8')));
  } catch {
    return new Set();
  }
}

/** Writes the cache whole or not at all: another clone may be reading or writing it at the same time. */
function writePassed(keys) {
  mkdirSync(path.dirname(CACHE_FILE), { recursive: true });
  const temporary = `${CACHE_FILE}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify([...keys].sort()));
  renameSync(temporary, CACHE_FILE);
}

/** The check of one file: 'passed', 'unformatted' or 'ignored', and the key it passed under. */
async function checkFile(file, passed) {
  const info = await prettier.getFileInfo(file, { ignorePath: ['.gitignore', '.prettierignore'] });
  if (info.ignored || info.inferredParser === null) return { outcome: 'ignored' };
  const options = { ...(await prettier.resolveConfig(file, { editorconfig: true })), filepath: file };
  const source = readFileSync(file, 'utf8');
  const key = createHash('sha256')
    .update(JSON.stringify([prettier.version, { ...options, filepath: path.relative(process.cwd(), file) }, source]))
    .digest('hex');
  if (passed.has(key)) return { outcome: 'passed', key };
  return { outcome: (await prettier.check(source, options)) ? 'passed' : 'unformatted', key };
}

const files = execFileSync(
  'git',
  ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', ...PATHSPECS],
  {
    encoding: 'utf8',
  },
)
  .split('\0')
  .filter((file) => file !== '')
  .sort();
const passed = readPassed();
const nowPassed = new Set();
const unformatted = [];
let broken = 0;
console.log('Checking formatting...');
for (const file of [...new Set(files)]) {
  try {
    const { outcome, key } = await checkFile(path.resolve(file), passed);
    if (outcome === 'passed') nowPassed.add(key);
    if (outcome === 'unformatted') unformatted.push(file);
  } catch (error) {
    console.error(`[error] ${file}: ${error.message}`);
    broken += 1;
  }
}
try {
  writePassed(nowPassed);
} catch (error) {
  // Only a later run's speed depends on it: say so, and keep the check's verdict.
  console.error(
    `warning: could not keep the format check's cache in ${CACHE_FILE} (${error.code ?? error.message}); set CLUSTERSTACK_LINT_CACHE to a directory this user may write`,
  );
}
for (const file of unformatted) console.warn(`[warn] ${file}`);
if (unformatted.length > 0) {
  console.warn(`[warn] Code style issues found in ${unformatted.length} files. Run Prettier with --write to fix.`);
} else if (broken === 0) {
  console.log('All matched files use Prettier code style!');
}
process.exit(broken > 0 ? 2 : unformatted.length > 0 ? 1 : 0);
