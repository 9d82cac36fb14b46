/** Label and field selectors with the syntax and the errors of the real server. */
import type { KubeObject } from './kube-object.js';
import { badRequest } from './status.js';

type Requirement =
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | 'doesnotexist' }
  | { key: string; op: 'gt' | 'lt'; value: number };

export type Selector = (labels: Record<string, string> | undefined) => boolean;

/** Splits on commas that are not inside `( )`, so `a in (x,y),b` is two requirements. */
function splitTopLevel(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of selector) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  parts.push(current);
  return parts.map((p) => p.trim());
}

const KEY = String.raw`[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?`;
const VALUE = String.raw`([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?`;

function parseRequirement(text: string, whole: string): Requirement {
  const fail = (): never => {
    throw badRequest(
      `unable to parse requirement: found '${text}', expected: in, notin, =, ==, !=, gt, lt in selector ${JSON.stringify(whole)}`,
    );
  };
  let m = new RegExp(`^!\\s*(${KEY})$`).exec(text);
  if (m) return { key: m[1] ?? '', op: 'doesnotexist' };
  m = new RegExp(`^(${KEY})$`).exec(text);
  if (m) return { key: m[1] ?? '', op: 'exists' };
  m = new RegExp(`^(${KEY})\\s*(==|=|!=)\\s*(${VALUE})$`).exec(text);
  if (m) return { key: m[1] ?? '', op: m[3] === '!=' ? 'notin' : 'in', values: [m[4] ?? ''] };
  m = new RegExp(`^(${KEY})\\s*(>|<)\\s*(-?[0-9]+)$`).exec(text);
  if (m) return { key: m[1] ?? '', op: m[3] === '>' ? 'gt' : 'lt', value: Number(m[4]) };
  m = new RegExp(`^(${KEY})\\s+(in|notin)\\s*\\(([^()]*)\\)$`).exec(text);
  if (m) {
    const values = (m[4] ?? '').split(',').map((v) => v.trim());
    if (values.some((v) => !new RegExp(`^${VALUE}$`).test(v))) fail();
    return { key: m[1] ?? '', op: m[3] === 'in' ? 'in' : 'notin', values };
  }
  return fail();
}

function matches(req: Requirement, labels: Record<string, string>): boolean {
  const has = Object.prototype.hasOwnProperty.call(labels, req.key);
  const value = labels[req.key];
  switch (req.op) {
    case 'exists':
      return has;
    case 'doesnotexist':
      return !has;
    case 'in':
      return has && req.values.includes(value ?? '');
    case 'notin':
      // Like the real server, `a!=b` and `a notin (b)` also match objects without the label.
      return !has || !req.values.includes(value ?? '');
    case 'gt':
      return has && /^-?[0-9]+$/.test(value ?? '') && Number(value) > req.value;
    case 'lt':
      return has && /^-?[0-9]+$/.test(value ?? '') && Number(value) < req.value;
  }
}

/** Parses a `labelSelector` query value; an empty selector matches everything. Throws a 400 on bad syntax. */
export function parseLabelSelector(selector: string | undefined): Selector {
  if (!selector || selector.trim() === '') return () => true;
  const requirements = splitTopLevel(selector).map((part) => parseRequirement(part, selector));
  return (labels) => requirements.every((req) => matches(req, labels ?? {}));
}

export type FieldSelector = (obj: KubeObject) => boolean;

const FIELDS: Record<string, (obj: KubeObject) => string> = {
  'metadata.name': (obj) => obj.metadata.name ?? '',
  'metadata.namespace': (obj) => obj.metadata.namespace ?? '',
};

/** Parses a `fieldSelector`; custom resources support only metadata.name and metadata.namespace. */
export function parseFieldSelector(selector: string | undefined): FieldSelector {
  if (!selector || selector.trim() === '') return () => true;
  const tests = selector.split(',').map((part) => {
    const m = /^\s*([A-Za-z0-9.]+)\s*(==|=|!=)\s*(.*?)\s*$/.exec(part);
    if (!m) throw badRequest(`invalid selector: '${selector}'; can't understand '${part}'`);
    const field = FIELDS[m[1] ?? ''];
    if (!field) throw badRequest(`"${m[1]}" is not a known field selector: only "metadata.name", "metadata.namespace"`);
    const negate = m[2] === '!=';
    const expected = m[3] ?? '';
    return (obj: KubeObject) => (field(obj) === expected) !== negate;
  });
  return (obj) => tests.every((t) => t(obj));
}
