// Reads YAML the way Helm reads a values file (yaml.v2 through sigs.k8s.io/yaml), so values a
// template produced mean here what they would mean to helm: `on`/`yes`/`off` are booleans, `0644`
// is octal, dates stay strings, `<<` merges.
import * as yaml from 'js-yaml';

const TRUE = new Set(['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON']);
const FALSE = new Set(['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF']);

// Same tag as the core types, so js-yaml replaces them rather than adding a second resolver.
const yaml11Bool = new yaml.Type('tag:yaml.org,2002:bool', {
  kind: 'scalar',
  resolve: (data: unknown) => typeof data === 'string' && (TRUE.has(data) || FALSE.has(data)),
  construct: (data: string) => TRUE.has(data),
  predicate: (value: unknown) => typeof value === 'boolean',
  represent: (value: object) => (value ? 'true' : 'false'),
});

// Go's strconv.ParseInt(s, 0, 64) after yaml.v2 drops underscores: 0x, 0o, 0b and a leading 0 (octal).
const INT = /^[-+]?(?:0b[01_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|0[0-7_]*|[1-9][0-9_]*)$/;
const yaml11Int = new yaml.Type('tag:yaml.org,2002:int', {
  kind: 'scalar',
  resolve: (data: unknown) => typeof data === 'string' && INT.test(data) && /[0-9]/.test(data),
  construct: (data: string) => {
    const text = data.replace(/_/g, '');
    const sign = text.startsWith('-') ? -1 : 1;
    const digits = text.replace(/^[-+]/, '');
    if (/^0b/.test(digits)) return sign * parseInt(digits.slice(2), 2);
    if (/^0o/.test(digits)) return sign * parseInt(digits.slice(2), 8);
    if (/^0x/.test(digits)) return sign * parseInt(digits.slice(2), 16);
    if (digits.length > 1 && digits.startsWith('0')) return sign * parseInt(digits, 8);
    return sign * parseInt(digits, 10);
  },
  predicate: (value: unknown) => typeof value === 'number' && Number.isInteger(value),
  represent: (value: object) => String(value),
});

const merge = (yaml as unknown as { types: Record<string, yaml.Type> }).types['merge'];

/** YAML 1.2 core (no timestamps) with yaml.v2's booleans, integers and merge keys. */
export const HELM_VALUES_SCHEMA = yaml.CORE_SCHEMA.extend({ implicit: [yaml11Bool, yaml11Int, ...(merge ? [merge] : [])] });

/** Every document in `text`, parsed like Helm parses values files; throws YAMLException. */
export function loadHelmYamlAll(text: string, filename?: string): unknown[] {
  const documents: unknown[] = [];
  yaml.loadAll(text, (document) => documents.push(document), { schema: HELM_VALUES_SCHEMA, ...(filename ? { filename } : {}) });
  return documents;
}
