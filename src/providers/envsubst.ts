// clusterctl's variable substitution over provider components (drone/envsubst as clusterctl uses
// it): `${VAR}` and `$VAR` take the variable's value; `${VAR:=default}`, `${VAR:-default}`,
// `${VAR=default}` and `${VAR-default}` take the default when the value is empty or absent; `$$`
// is a literal `$`. A variable with neither a value nor a default is reported, never replaced by an
// empty string (clusterctl refuses such components too). Pure: no environment is read.
import { Failure } from '../core/failure.js';

const NAME_START = /[A-Za-z_]/;
const NAME_CHAR = /[A-Za-z0-9_]/;
const DEFAULT_OPERATORS = [':=', ':-', '=', '-'];

export interface SubstitutionResult {
  text: string;
  /** Variables that have no value and no default, sorted; when non-empty `text` must not be used. */
  missing: string[];
  /** Every variable the text reads, sorted. */
  variables: string[];
}

/** Thrown for a `${...}` this substitution does not understand (unclosed, or an operator clusterctl's templates do not use). */
export class SubstitutionSyntaxError extends Failure {
  constructor(message: string) {
    super('fix-input', message);
    this.name = 'SubstitutionSyntaxError';
  }
}

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index; i += 1) if (text.charCodeAt(i) === 10) line += 1;
  return line;
}

/** Substitutes every variable of `text` with `lookup` (undefined: the variable has no value). */
export function substituteVariables(text: string, lookup: (name: string) => string | undefined): SubstitutionResult {
  const missing = new Set<string>();
  const variables = new Set<string>();
  // Parses from `start` until `stop` (a closing brace for defaults) or the end; returns the text and where it stopped.
  const parse = (start: number, nested: boolean): { out: string; end: number } => {
    let out = '';
    let i = start;
    while (i < text.length) {
      const char = text[i]!;
      if (nested && char === '}') return { out, end: i };
      if (char !== '$') {
        out += char;
        i += 1;
        continue;
      }
      const next = text[i + 1];
      if (next === '$') {
        out += '$';
        i += 2;
        continue;
      }
      if (next !== undefined && NAME_START.test(next)) {
        let j = i + 1;
        while (j < text.length && NAME_CHAR.test(text[j]!)) j += 1;
        const name = text.slice(i + 1, j);
        variables.add(name);
        const value = lookup(name);
        if (value === undefined) missing.add(name);
        else out += value;
        i = j;
        continue;
      }
      if (next !== '{') {
        out += char;
        i += 1;
        continue;
      }
      let j = i + 2;
      while (j < text.length && NAME_CHAR.test(text[j]!)) j += 1;
      const name = text.slice(i + 2, j);
      if (name === '' || !NAME_START.test(name[0]!))
        throw new SubstitutionSyntaxError(
          `line ${lineOf(text, i)}: "${text.slice(i, i + 20)}" is not a variable reference; write \${NAME}, or $$ for a literal $`,
        );
      variables.add(name);
      const value = lookup(name);
      if (text[j] === '}') {
        if (value === undefined) missing.add(name);
        else out += value;
        i = j + 1;
        continue;
      }
      const operator = DEFAULT_OPERATORS.find((candidate) => text.startsWith(candidate, j));
      if (!operator) {
        if (j >= text.length)
          throw new SubstitutionSyntaxError(`line ${lineOf(text, i)}: \${${name} is never closed with "}"`);
        throw new SubstitutionSyntaxError(
          `line ${lineOf(text, i)}: \${${name}${text[j]}...} uses an operator clusterctl's provider templates do not use; only \${${name}}, \${${name}:=default} and \${${name}:-default} are substituted`,
        );
      }
      const missingBefore = new Set(missing);
      const fallback = parse(j + operator.length, true);
      if (fallback.end >= text.length)
        throw new SubstitutionSyntaxError(`line ${lineOf(text, i)}: \${${name}${operator}... is never closed with "}"`);
      const useDefault = value === undefined || value === '';
      // Variables inside a default that is not used are not needed.
      if (!useDefault) for (const inner of [...missing]) if (!missingBefore.has(inner)) missing.delete(inner);
      out += useDefault ? fallback.out : value;
      i = fallback.end + 1;
    }
    return { out, end: i };
  };
  const { out } = parse(0, false);
  return { text: out, missing: [...missing].sort(), variables: [...variables].sort() };
}
