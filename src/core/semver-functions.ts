// The parts of semver that planning and rendering use, each loaded from its own file: `import
// 'semver'` loads all of its fifty-odd modules (about 20 ms of every CLI start-up) where these need
// a handful.
import coerce from 'semver/functions/coerce.js';
import compare from 'semver/functions/compare.js';
import eq from 'semver/functions/eq.js';
import gte from 'semver/functions/gte.js';
import lt from 'semver/functions/lt.js';
import parse from 'semver/functions/parse.js';
import prerelease from 'semver/functions/prerelease.js';
import valid from 'semver/functions/valid.js';

export type { SemVer } from 'semver';

export const semver = { coerce, compare, eq, gte, lt, parse, prerelease, valid };
