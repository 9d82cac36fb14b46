// Kubernetes label selectors, the one implementation for every caller: the object form
// (metav1.LabelSelector: matchLabels and matchExpressions, as in AddonsLayers, fetchConfig and
// openMCP's scheduler configuration), checked the way the API server checks it, and the string form
// of a kustomize patch target (`a=b,c!=d,e in (x,y),!f`), parsed into the object form. `{}`
// selects everything; callers decide what an absent selector means. Pure.
import type { Problem } from './problem.js';

interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

const NAME = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;
const PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function keyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !PREFIX.test(prefix)))
    return `label key "${key}" has an invalid prefix (a DNS subdomain such as example.com)`;
  if (name.length > 63 || !NAME.test(name))
    return `"${key}" is not a valid label key (letters, digits, "-", "_", ".", at most 63, starting and ending alphanumeric)`;
  return undefined;
}

function valueProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return `label values must be strings, found ${JSON.stringify(value)} (quote it)`;
  if (value !== '' && (value.length > 63 || !NAME.test(value))) return `"${value}" is not a valid label value`;
  return undefined;
}

/** Every problem of a label selector at `path` (empty when it is valid). */
export function validateLabelSelector(selector: unknown, path: string): Problem[] {
  const problems: Problem[] = [];
  if (!isRecord(selector))
    return [
      {
        path,
        message:
          'must be a label selector: a mapping with matchLabels and/or matchExpressions ({} selects every Cluster)',
      },
    ];
  for (const key of Object.keys(selector)) {
    if (key !== 'matchLabels' && key !== 'matchExpressions')
      problems.push({
        path: `${path}.${key}`,
        message: 'is not a field of a label selector; use matchLabels or matchExpressions',
      });
  }
  if (selector.matchLabels !== undefined) {
    if (!isRecord(selector.matchLabels))
      problems.push({ path: `${path}.matchLabels`, message: 'must map label keys to values' });
    else {
      for (const [key, value] of Object.entries(selector.matchLabels)) {
        const problem = keyProblem(key) ?? valueProblem(value);
        if (problem) problems.push({ path: `${path}.matchLabels`, message: problem });
      }
    }
  }
  if (selector.matchExpressions !== undefined) {
    if (!Array.isArray(selector.matchExpressions))
      problems.push({ path: `${path}.matchExpressions`, message: 'must be a list of {key, operator, values}' });
    else {
      selector.matchExpressions.forEach((expression: unknown, index) => {
        const at = `${path}.matchExpressions[${index}]`;
        if (!isRecord(expression)) {
          problems.push({ path: at, message: 'must be {key, operator, values}' });
          return;
        }
        const key = typeof expression.key === 'string' ? expression.key : '';
        const keyError = key === '' ? 'key is required' : keyProblem(key);
        if (keyError) problems.push({ path: `${at}.key`, message: keyError });
        if (typeof expression.operator !== 'string' || !OPERATORS.includes(expression.operator)) {
          problems.push({
            path: `${at}.operator`,
            message: `must be one of ${OPERATORS.join(', ')}, found ${JSON.stringify(expression.operator ?? null)}`,
          });
          return;
        }
        const values = expression.values;
        const needsValues = expression.operator === 'In' || expression.operator === 'NotIn';
        if (needsValues && (!Array.isArray(values) || values.length === 0))
          problems.push({
            path: `${at}.values`,
            message: `must list at least one value for operator ${expression.operator}`,
          });
        else if (!needsValues && values !== undefined && (!Array.isArray(values) || values.length > 0))
          problems.push({ path: `${at}.values`, message: `must be empty for operator ${expression.operator}` });
        else if (Array.isArray(values)) {
          for (const value of values) {
            const problem = valueProblem(value);
            if (problem) problems.push({ path: `${at}.values`, message: problem });
          }
        }
      });
    }
  }
  return problems;
}

/** Parses the string form into the object form; throws with the requirement that does not parse. */
export function parseLabelSelector(text: string): LabelSelector {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of text) {
    if (char === '(') depth += 1;
    if (char === ')') depth -= 1;
    if (char === ',' && depth === 0) {
      parts.push(current.trim());
      current = '';
    } else current += char;
  }
  parts.push(current.trim());
  const matchExpressions = parts
    .filter((part) => part !== '')
    .map((part): LabelSelectorRequirement => {
      let match = /^!\s*([\w./-]+)$/.exec(part);
      if (match) return { key: match[1]!, operator: 'DoesNotExist' };
      match = /^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$/.exec(part);
      if (match) return { key: match[1]!, operator: match[2] === '!=' ? 'NotIn' : 'In', values: [match[3]!] };
      match = /^([\w./-]+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(part);
      if (match)
        return {
          key: match[1]!,
          operator: match[2] === 'in' ? 'In' : 'NotIn',
          values: match[3]!.split(',').map((value) => value.trim()),
        };
      match = /^([\w./-]+)$/.exec(part);
      if (match) return { key: match[1]!, operator: 'Exists' };
      throw new Error(
        `cannot parse "${part}"; expected key=value, key!=value, key in (a,b), key notin (a,b), key or !key`,
      );
    });
  return { matchExpressions };
}

/**
 * Both selectors at once (their requirements ANDed), as openMCP's scheduler combines a purpose's
 * `selector` with `selectors.clusters`: on a matchLabels key both give, `global`'s value wins.
 */
export function combineLabelSelectors(
  local: LabelSelector | undefined,
  global: LabelSelector | undefined,
): LabelSelector | undefined {
  if (!local) return global;
  if (!global) return local;
  return {
    matchLabels: { ...local.matchLabels, ...global.matchLabels },
    matchExpressions: [...(local.matchExpressions ?? []), ...(global.matchExpressions ?? [])],
  };
}

/** Whether `labels` match a (valid) selector; `{}` matches everything. */
export function matchesLabelSelector(selector: LabelSelector, labels: Record<string, string> | undefined): boolean {
  const have = labels ?? {};
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (have[key] !== value) return false;
  for (const requirement of selector.matchExpressions ?? []) {
    const present = Object.hasOwn(have, requirement.key);
    const value = have[requirement.key];
    switch (requirement.operator) {
      case 'In':
        if (!present || !(requirement.values ?? []).includes(value!)) return false;
        break;
      case 'NotIn':
        if (present && (requirement.values ?? []).includes(value!)) return false;
        break;
      case 'Exists':
        if (!present) return false;
        break;
      case 'DoesNotExist':
        if (present) return false;
        break;
    }
  }
  return true;
}
