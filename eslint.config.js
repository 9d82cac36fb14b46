// Lint: ESLint's and typescript-eslint's recommended rules, and functions of at most 80 lines
// (blank and comment lines not counted) but for those in lint/long-functions.json.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { URL } from 'node:url';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import functionLength from './lint/function-length.js';

// `npm run lint` keeps its cache per machine (lint/machine-cache.js). ESLint reuses a file's
// result while the file and the hash of this config are unchanged, but the hash leaves out rule code,
// the list the function-length rule reads and the plugins' versions: this setting puts them in.
const lintCacheKey = createHash('sha256')
  .update(
    ['lint/function-length.js', 'lint/long-functions.json', 'package-lock.json']
      .map((file) => readFileSync(new URL(file, import.meta.url), 'utf8'))
      .join('\0'),
  )
  .digest('hex');

export default tseslint.config(
  { ignores: ['dist/', 'out/', 'node_modules/', 'test/fixtures/', '**/*.d.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    settings: { lintCacheKey },
    rules: {
      // Unused names are mistakes, but `_`-prefixed ones are kept on purpose (a signature's shape).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // Names, refs and escapes are checked for control characters on purpose (git, Lua, YAML).
      'no-control-regex': 'off',
    },
  },
  {
    files: ['test/**/*.ts'],
    // Tests read parsed YAML and JSON fixtures and reach into them by path; a type per fixture is noise.
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['src/**/*.ts', 'renderers/**/*.ts', 'gitops/**/*.ts'],
    plugins: { local: { rules: { 'function-length': functionLength } } },
    rules: { 'local/function-length': ['error', { max: 80, skipBlankLines: true, skipComments: true }] },
  },
);
