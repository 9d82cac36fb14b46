// Makes a Go template fail on a missing map key, the way text/template's `missingkey=error` would,
// by rewriting every field chain (`.Cluster.spec.x`, `$c.spec.x`) into a checked read.
//
// Why a rewrite: the helm CLI never turns on its engine's Strict mode. `helm template` runs with
// `missingkey=zero` and then deletes every "<no value>" from the output, and `helm lint --strict`
// only makes warnings fatal: it still renders with `missingkey=zero`. Verified against 3.10.1 and
// again against every supported helm, 3.22.0 and 4.3.1 (helm 4's pkg/action/lint.go: Strict only
// lowers the severity that fails; values-template.test.ts pins it on each): still needed. A missing field
// therefore renders as an empty string, and through `quote`, `default` or `printf` leaves no trace
// at all. The rewrite turns `.a.b` into
//
//   (last (list <check a on .> <check b on .a> .a.b))
//   check k on X = (include (ternary "cs-present" "<marker>" (hasKey (ternary X (dict) (kindIs "map" X)) "k")) .)
//
// Arguments are evaluated left to right and `include` of an undefined template name is an error in
// every helm mode (lint too, unlike `required` and `fail`), so the first absent key aborts with a
// message naming the whole field and the part that is missing. `ternary`/`list`/`last` evaluate all
// of their arguments, so this does not depend on the short-circuit `and`/`or` of Go 1.18+ (which
// every supported helm has; the form is kept because it needs nothing else and is proven). (Helm's
// values handling deletes null-valued keys, so a field set to null counts as missing.) The premise
// is pinned by a test in values-template.test.ts against the real binary.
//
// Consequence (same as Helm's strict mode): `{{ if .Cluster.spec.x }}` and `default` on a missing key
// fail too. Optional fields are read with `dig`, which takes the map and never fails:
// `{{ dig "spec" "x" "fallback" .Cluster }}`. Strings evaluated at run time by `tpl` are not rewritten.
import { Failure } from '../src/core/failure.js';

/** The template every check includes when the key is there; the chart must define it (empty). */
const PRESENT_TEMPLATE = 'cs-present';
export const PRESENT_DEFINITION = `{{- define "${PRESENT_TEMPLATE}" }}{{- end }}`;
const MARKER_PREFIX = 'cs-missing';

export interface StrictTemplate {
  /** The rewritten template (same lines as the original: nothing adds a newline). */
  text: string;
  /** Names the template declares with define/block (they are global within one helm render). */
  defines: string[];
  /** Rewritten operand → the original chain, to put the original back into helm's messages. */
  restore: Map<string, string>;
  /** False when the template could not be lexed; it is then left for helm to report. */
  rewritten: boolean;
  /** Every if/with/range/define/block has its end (so the template can be wrapped in a define safely). */
  balanced: boolean;
}

export interface MissingFieldMarker {
  /** The field as the template reads it, resolved against with/range/variables where possible. */
  field: string;
  /** The part of it that does not exist. */
  missing: string;
  line: number;
}

/** Reads the marker of a failed check out of a helm error message. */
export function parseMissingMarker(message: string): MissingFieldMarker | undefined {
  const match = /no template "cs-missing\|([^|"]*)\|([^|"]*)\|(\d+)"/.exec(message);
  if (!match) return undefined;
  return { field: match[1] ?? '', missing: match[2] ?? '', line: Number(match[3]) };
}

/** Rewrites every field chain of `template` into a checked read; see the file comment. */
export function strictFieldAccess(template: string): StrictTemplate {
  try {
    return new Rewriter(template).run();
  } catch (error) {
    if (error instanceof LexError)
      return { text: template, defines: [], restore: new Map(), rewritten: false, balanced: false };
    throw error;
  }
}

class LexError extends Failure {
  constructor(message: string) {
    super('internal', message);
  }
}

type TokenType = 'space' | 'field' | 'variable' | 'identifier' | 'string' | 'raw' | 'char' | 'number' | 'dot' | 'punct';

interface Token {
  type: TokenType;
  start: number;
  end: number;
  text: string;
}

interface Frame {
  keyword: string;
  outerDot: string | undefined;
}

const SPACE = /[ \t\r\n]/;
const IDENT_START = /[\p{L}_]/u;
const IDENT = /[\p{L}\p{Nd}_]/u;

class Rewriter {
  readonly #src: string;
  readonly #lineStarts: number[] = [0];
  readonly #out: string[] = [];
  readonly #defines: string[] = [];
  readonly #restore = new Map<string, string>();
  readonly #stack: Frame[] = [];
  readonly #vars = new Map<string, string>();
  /** Where dot points, as a path from the context root ('' is the root); undefined when unknown. */
  #dot: string | undefined = '';
  #balanced = true;

  constructor(source: string) {
    this.#src = source;
    for (let i = 0; i < source.length; i++) if (source[i] === '\n') this.#lineStarts.push(i + 1);
  }

  run(): StrictTemplate {
    const src = this.#src;
    let i = 0;
    while (i < src.length) {
      const open = src.indexOf('{{', i);
      if (open < 0) {
        this.#out.push(src.slice(i));
        break;
      }
      this.#out.push(src.slice(i, open));
      let p = open + 2;
      if (src[p] === '-' && SPACE.test(src[p + 1] ?? '')) p += 2;
      const commentStart = this.#skipSpaces(p);
      if (src.startsWith('/*', commentStart)) {
        i = this.#comment(open, commentStart);
        continue;
      }
      const { tokens, end } = this.#lexAction(p);
      this.#out.push(src.slice(open, p));
      this.#out.push(this.#rewriteAction(tokens));
      this.#out.push(src.slice(tokens.length > 0 ? tokens[tokens.length - 1]!.end : p, end));
      i = end;
    }
    const balanced = this.#balanced && this.#stack.length === 0;
    return { text: this.#out.join(''), defines: this.#defines, restore: this.#restore, rewritten: true, balanced };
  }

  #skipSpaces(p: number): number {
    while (p < this.#src.length && SPACE.test(this.#src[p]!)) p++;
    return p;
  }

  /** Copies `{{/* ... *\/}}` unchanged; returns the index after it. */
  #comment(open: number, start: number): number {
    const close = this.#src.indexOf('*/', start + 2);
    if (close < 0) throw new LexError('unclosed comment');
    let p = close + 2;
    if (SPACE.test(this.#src[p] ?? '') && this.#src[p + 1] === '-') p += 2;
    if (!this.#src.startsWith('}}', p)) throw new LexError('comment ends before closing delimiter');
    this.#out.push(this.#src.slice(open, p + 2));
    return p + 2;
  }

  /** Tokens up to the closing delimiter; `end` is the index after `}}`. */
  #lexAction(start: number): { tokens: Token[]; end: number } {
    const src = this.#src;
    const tokens: Token[] = [];
    let p = start;
    const push = (type: TokenType, from: number, to: number) =>
      tokens.push({ type, start: from, end: to, text: src.slice(from, to) });
    for (;;) {
      if (p >= src.length) throw new LexError('unclosed action');
      const c = src[p]!;
      if (src.startsWith('}}', p)) return { tokens, end: p + 2 };
      if (SPACE.test(c)) {
        if (src[p + 1] === '-' && src.startsWith('}}', p + 2)) return { tokens, end: p + 4 };
        let q = p;
        while (q < src.length && SPACE.test(src[q]!) && !(src[q + 1] === '-' && src.startsWith('}}', q + 2))) q++;
        if (q === p) q++;
        push('space', p, q);
        p = q;
      } else if (c === '"' || c === "'") {
        let q = p + 1;
        while (q < src.length && src[q] !== c) {
          if (src[q] === '\n') throw new LexError('unterminated quoted string');
          q += src[q] === '\\' ? 2 : 1;
        }
        if (q >= src.length) throw new LexError('unterminated quoted string');
        push(c === '"' ? 'string' : 'char', p, q + 1);
        p = q + 1;
      } else if (c === '`') {
        const q = src.indexOf('`', p + 1);
        if (q < 0) throw new LexError('unterminated raw string');
        push('raw', p, q + 1);
        p = q + 1;
      } else if (c === '.' && IDENT_START.test(src[p + 1] ?? '')) {
        let q = p + 1;
        while (q < src.length && IDENT.test(src[q]!)) q++;
        push('field', p, q);
        p = q;
      } else if (c === '$') {
        let q = p + 1;
        while (q < src.length && IDENT.test(src[q]!)) q++;
        push('variable', p, q);
        p = q;
      } else if (IDENT_START.test(c)) {
        let q = p + 1;
        while (q < src.length && IDENT.test(src[q]!)) q++;
        push('identifier', p, q);
        p = q;
      } else if (
        /[0-9]/.test(c) ||
        (c === '.' && /[0-9]/.test(src[p + 1] ?? '')) ||
        ((c === '+' || c === '-') && /^(?:[0-9]|\.[0-9])/.test(src.slice(p + 1, p + 3)))
      ) {
        let q = p + 1;
        while (
          q < src.length &&
          (/[0-9A-Za-z_.]/.test(src[q]!) || (/[+-]/.test(src[q]!) && /[eEpP]/.test(src[q - 1]!)))
        )
          q++;
        push('number', p, q);
        p = q;
      } else if (c === '.') {
        push('dot', p, p + 1);
        p += 1;
      } else if (c === ':' && src[p + 1] === '=') {
        push('punct', p, p + 2);
        p += 2;
      } else {
        push('punct', p, p + 1);
        p += 1;
      }
    }
  }

  /** The action's text (between the delimiters and trim markers) with its chains rewritten. */
  #rewriteAction(tokens: Token[]): string {
    const significant = tokens.filter((t) => t.type !== 'space');
    const keyword = significant[0]?.type === 'identifier' ? significant[0].text : undefined;
    const chains = this.#findChains(tokens);
    const parts: string[] = [];
    let cursor = tokens[0]?.start ?? 0;
    for (const chain of chains) {
      parts.push(this.#src.slice(cursor, chain.start));
      parts.push(this.#checkedRead(chain));
      cursor = chain.end;
    }
    if (tokens.length > 0) parts.push(this.#src.slice(cursor, tokens[tokens.length - 1]!.end));
    this.#track(keyword, significant, chains);
    return parts.join('');
  }

  #findChains(tokens: Token[]): Chain[] {
    const chains: Chain[] = [];
    for (let i = 0; i < tokens.length; i++) {
      const token = tokens[i]!;
      if (token.type !== 'field') continue;
      const before = tokens[i - 1];
      const prev = before !== undefined && before.type !== 'space' && before.end === token.start ? before : undefined;
      let base = '.';
      let start = token.start;
      if (prev?.type === 'variable') {
        base = prev.text;
        start = prev.start;
      } else if (prev !== undefined && !(prev.type === 'punct' && prev.text !== ')')) {
        // Inside a chain already taken, `(pipeline).x`, or something helm will reject: left as written.
        continue;
      }
      const keys: string[] = [];
      let j = i;
      let end = token.end;
      while (j < tokens.length && tokens[j]!.type === 'field' && (j === i || tokens[j - 1]!.end === tokens[j]!.start)) {
        keys.push(tokens[j]!.text.slice(1));
        end = tokens[j]!.end;
        j++;
      }
      chains.push({ base, keys, start, end, line: this.#lineOf(start) });
      i = j - 1;
    }
    return chains;
  }

  #checkedRead(chain: Chain): string {
    const expr = (n: number): string => {
      if (n === 0) return chain.base;
      const tail = chain.keys.slice(0, n).join('.');
      return chain.base === '.' ? `.${tail}` : `${chain.base}.${tail}`;
    };
    const shown = this.#display(chain);
    const checks = chain.keys.map((key, index) => {
      const missing = this.#display({ ...chain, keys: chain.keys.slice(0, index + 1) });
      const marker = `${MARKER_PREFIX}|${shown.path}|${missing.path}|${chain.line}`;
      const x = expr(index);
      return `(include (ternary "${PRESENT_TEMPLATE}" "${marker}" (hasKey (ternary ${x} (dict) (kindIs "map" ${x})) "${key}")) .)`;
    });
    const rewritten = `(last (list ${checks.join(' ')} ${expr(chain.keys.length)}))`;
    this.#restore.set(rewritten, this.#src.slice(chain.start, chain.end));
    return rewritten;
  }

  /** The chain as a path from the context root when dot or the variable is known. */
  #display(chain: Pick<Chain, 'base' | 'keys'>): { path: string; resolved: boolean } {
    const tail = `.${chain.keys.join('.')}`;
    if (chain.base === '.')
      return this.#dot === undefined
        ? { path: tail, resolved: false }
        : { path: `${this.#dot}${tail}`, resolved: true };
    if (chain.base === '$') return { path: tail, resolved: true };
    const variable = this.#vars.get(chain.base);
    return variable === undefined
      ? { path: `${chain.base}${tail}`, resolved: false }
      : { path: `${variable}${tail}`, resolved: true };
  }

  /** Follows with/range/define blocks and simple variable assignments, for readable field names. */
  #track(keyword: string | undefined, significant: Token[], chains: Chain[]): void {
    const onlyChain = (from: number): Chain | undefined => {
      const rest = significant.slice(from);
      const chain = chains[chains.length - 1];
      if (!chain || chains.length !== 1 || rest.length === 0) return undefined;
      return rest[0]!.start === chain.start && rest[rest.length - 1]!.end === chain.end ? chain : undefined;
    };
    const resolvedPath = (chain: Chain | undefined): string | undefined => {
      if (!chain) return undefined;
      const shown = this.#display(chain);
      return shown.resolved ? shown.path : undefined;
    };
    switch (keyword) {
      case 'if':
        this.#stack.push({ keyword, outerDot: this.#dot });
        return;
      case 'with':
        this.#stack.push({ keyword, outerDot: this.#dot });
        this.#dot = resolvedPath(onlyChain(1));
        return;
      case 'range': {
        this.#stack.push({ keyword, outerDot: this.#dot });
        const assign = significant.findIndex((t) => t.text === ':=');
        const element = resolvedPath(onlyChain(assign >= 0 ? assign + 1 : 1));
        const item = element === undefined ? undefined : `${element}[]`;
        if (assign >= 0) {
          const names = significant
            .slice(1, assign)
            .filter((t) => t.type === 'variable')
            .map((t) => t.text);
          for (const name of names) this.#vars.delete(name);
          const last = names[names.length - 1];
          if (last !== undefined && item !== undefined) this.#vars.set(last, item);
        }
        this.#dot = item;
        return;
      }
      case 'define':
      case 'block': {
        const name = significant[1];
        if (name && (name.type === 'string' || name.type === 'raw')) this.#defines.push(unquote(name.text));
        this.#stack.push({ keyword, outerDot: this.#dot });
        this.#dot = undefined;
        return;
      }
      case 'else': {
        const frame = this.#stack[this.#stack.length - 1];
        if (frame) this.#dot = frame.outerDot;
        else this.#balanced = false;
        return;
      }
      case 'end': {
        const frame = this.#stack.pop();
        if (frame) this.#dot = frame.outerDot;
        else this.#balanced = false;
        return;
      }
      default: {
        const first = significant[0];
        if (first?.type === 'variable' && significant[1]?.text === ':=') {
          const value = resolvedPath(onlyChain(2));
          if (value === undefined) this.#vars.delete(first.text);
          else this.#vars.set(first.text, value);
        }
      }
    }
  }

  #lineOf(offset: number): number {
    let low = 0;
    let high = this.#lineStarts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (this.#lineStarts[mid]! <= offset) low = mid;
      else high = mid - 1;
    }
    return low + 1;
  }
}

interface Chain {
  /** `.` for dot, `$` or `$name` for a variable. */
  base: string;
  keys: string[];
  start: number;
  end: number;
  line: number;
}

function unquote(literal: string): string {
  if (literal.startsWith('`')) return literal.slice(1, -1);
  try {
    return JSON.parse(literal) as string;
  } catch {
    return literal.slice(1, -1);
  }
}
