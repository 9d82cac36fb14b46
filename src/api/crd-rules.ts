// The CEL rules (x-kubernetes-validations) of our CRDs, read from the CRD files and evaluated on
// input objects as the API server evaluates them at admission: the CRDs are the one source of what
// they say, so the CLI and the controller refuse what `kubectl apply` would, with the CRD's message,
// and no rule is said twice. Transition rules (those reading oldSelf) compare with the stored
// object, which an input file does not have: they stay the API server's. Pure: the CRDs' text is
// read elsewhere (src/inputs/crd-rule-verdicts.ts) and handed in.
import { celLibrary } from '../core/addon-wait-conditions.js';
import type { Problem } from '../core/problem.js';
import { decodeYamlDocument } from '../yaml/kube-yaml.js';

/** Checks one object of `kind` against its CRD's rules: every refusal, as a problem with its field path. */
export type CrdRuleChecker = (kind: string, object: Record<string, unknown>) => Problem[];

/** One x-kubernetes-validations entry, with the kind and the property path of the schema node that carries it. */
export interface CrdRule {
  kind: string;
  /** Property names from the object's root to the node, e.g. ['spec', 'channel']. */
  at: string[];
  rule: string;
  message?: string;
  messageExpression?: string;
  /** Where the API server reports a refusal, relative to the node (`.versions`). */
  fieldPath?: string;
}

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  'x-kubernetes-validations'?: { rule: string; message?: string; messageExpression?: string; fieldPath?: string }[];
}

interface CrdDocument {
  spec: { names: { kind: string }; versions: { schema?: { openAPIV3Schema?: SchemaNode } }[] };
}

/** Whether a rule compares with the stored object (reads oldSelf): such rules need an update to evaluate. */
function isTransitionRule(rule: { rule: string }): boolean {
  return /\boldSelf\b/.test(rule.rule);
}

/**
 * Every rule of the CRDs in `crdTexts` that an input can be checked against (not a transition
 * rule), in schema order. Rules are read where properties lead (the only place ours sit);
 * test/crd-rules.test.ts checks that no rule of the CRDs is left out.
 */
export function crdRules(crdTexts: readonly string[]): CrdRule[] {
  const rules: CrdRule[] = [];
  const visit = (kind: string, node: SchemaNode | undefined, at: string[]): void => {
    if (!node) return;
    for (const entry of node['x-kubernetes-validations'] ?? []) {
      if (isTransitionRule(entry)) continue;
      rules.push({ kind, at, rule: entry.rule, ...pick(entry, ['message', 'messageExpression', 'fieldPath']) });
    }
    for (const [name, child] of Object.entries(node.properties ?? {})) visit(kind, child, [...at, name]);
  };
  for (const text of crdTexts) {
    const crd = decodeYamlDocument(text).value as CrdDocument;
    // Our CRDs serve one version (test/crds.test.ts): its schema is the one inputs are written in.
    for (const version of crd.spec.versions) visit(crd.spec.names.kind, version.schema?.openAPIV3Schema, []);
  }
  return rules;
}

function pick<T extends object, K extends keyof T>(value: T, keys: K[]): Partial<Pick<T, K>> {
  const picked: Partial<Pick<T, K>> = {};
  for (const key of keys) if (value[key] !== undefined) picked[key] = value[key];
  return picked;
}

/** A YAML value as the API server hands it to CEL: integers are CEL ints (cel-js: bigint), not doubles. */
function celValue(value: unknown): unknown {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  if (Array.isArray(value)) return value.map(celValue);
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, celValue(item)]));
  return value;
}

// Parsed once per process: the rules are a handful of fixed expressions (a parse costs more than an evaluation).
const programs = new Map<string, ReturnType<ReturnType<typeof celLibrary>['parse']>>();

function program(expression: string): ReturnType<ReturnType<typeof celLibrary>['parse']> {
  let parsed = programs.get(expression);
  if (!parsed) {
    parsed = celLibrary().parse(expression);
    programs.set(expression, parsed);
  }
  return parsed;
}

function valueAt(object: Record<string, unknown>, at: string[]): unknown {
  let value: unknown = object;
  for (const name of at)
    value =
      typeof value === 'object' && value !== null && !Array.isArray(value)
        ? (value as Record<string, unknown>)[name]
        : undefined;
  return value;
}

/**
 * The problems of `object` under `rules` (those of its kind). As at admission, a rule on an absent
 * field is not evaluated. A rule that cannot be evaluated (a value of the wrong type: `size` of a
 * number) says nothing: the schema checks of validate.ts report the type, which is all a person
 * can fix first.
 */
function checkCrdRules(rules: readonly CrdRule[], kind: string, object: Record<string, unknown>): Problem[] {
  const problems: Problem[] = [];
  for (const rule of rules) {
    if (rule.kind !== kind) continue;
    const self = valueAt(object, rule.at);
    if (self === undefined || self === null) continue;
    const context = { self: celValue(self) };
    let holds: unknown;
    try {
      holds = program(rule.rule)(context);
    } catch {
      continue;
    }
    if (holds === true) continue;
    const path = [...rule.at, ...(rule.fieldPath?.replace(/^\./, '').split('.') ?? [])].join('.');
    problems.push({ ...(path ? { path } : {}), message: ruleMessage(rule, context) });
  }
  return problems;
}

/** The CRD's message for a refusal: its messageExpression's value, else its message, else the rule (the API server's fallback). */
function ruleMessage(rule: CrdRule, context: Record<string, unknown>): string {
  if (rule.messageExpression !== undefined) {
    try {
      const message = program(rule.messageExpression)(context);
      if (typeof message === 'string' && message.trim() !== '') return message;
    } catch {
      // The API server falls back to message (or the rule) when the expression fails; so do we.
    }
  }
  return rule.message?.trim() ?? `failed rule: ${rule.rule}`;
}

/** A checker over the CRDs in `crdTexts`, which reads them on its first check (a run whose verdicts are remembered never does). */
export function crdRuleChecker(crdTexts: readonly string[]): CrdRuleChecker {
  let rules: CrdRule[] | undefined;
  return (kind, object) => checkCrdRules((rules ??= crdRules(crdTexts)), kind, object);
}
