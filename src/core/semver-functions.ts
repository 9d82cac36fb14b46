// The parts of semver that planning uses, each loaded from its own file: `import 'semver'` loads
// all of its fifty-odd modules (about 20 ms of every CLI start-up) where these need a handful.
import compare from 'semver/functions/compare.js';
import eq from 'semver/functions/eq.js';
import gte from 'semver/functions/gte.js';
import parse from 'semver/functions/parse.js';
import valid from 'semver/functions/valid.js';

export type { SemVer } from 'semver';

export const semver = { compare, eq, gte, parse, valid };
