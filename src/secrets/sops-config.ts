// `.sops.yaml` creation rules, read as sops reads them (config/config.go): the rules are tried in
// order, a rule without `path_regex` matches every file, the first match wins, and its `age` (a
// comma-separated string or a list) names the recipients. Paths are relative to the directory of
// the `.sops.yaml`; for us that is the root of the rendered tree. Other key types (pgp, kms, ...) and
// `key_groups` cannot be written by clusterstack and are refused with a message saying so.
import { Failure } from '../core/failure.js';
import { decodeYamlDocument, YamlDecodeError } from '../yaml/kube-yaml.js';
import { checkAgeRecipients, splitRecipientList } from './age-recipients.js';

/** One creation rule: files matching `pathRegex` (every file when absent) go to `recipients`. */
export interface SopsCreationRule {
  pathRegex?: string;
  recipients: string[];
}

const OTHER_KEY_TYPES = ['pgp', 'kms', 'gcp_kms', 'azure_keyvault', 'hc_vault_transit_uri', 'hckms', 'key_groups'];

/** The creation rules of a `.sops.yaml` text; throws a fix-input Failure naming `origin` and the rule. */
export function parseSopsConfig(text: string, origin: string): SopsCreationRule[] {
  let value: unknown;
  try {
    value = decodeYamlDocument(text).value;
  } catch (error) {
    const reason = error instanceof YamlDecodeError ? error.message : String(error);
    throw new Failure('fix-input', `${origin} is not valid YAML: ${reason}`);
  }
  const rules = (value as { creation_rules?: unknown } | null)?.creation_rules;
  if (!Array.isArray(rules) || rules.length === 0) {
    throw new Failure(
      'fix-input',
      `${origin} has no creation_rules list: add one, e.g. creation_rules: [{path_regex: '\\.yaml$', age: 'age1...'}]`,
    );
  }
  return rules.map((rule, index) => parseRule(rule, `${origin} creation_rules[${index}]`));
}

function parseRule(rule: unknown, where: string): SopsCreationRule {
  if (rule === null || typeof rule !== 'object' || Array.isArray(rule))
    throw new Failure('fix-input', `${where} is not a mapping`);
  const { path_regex: pathRegex, age } = rule as Record<string, unknown>;
  if (pathRegex !== undefined && pathRegex !== null && typeof pathRegex !== 'string')
    throw new Failure('fix-input', `${where}: path_regex must be a string`);
  if (typeof pathRegex === 'string' && pathRegex !== '') {
    try {
      new RegExp(pathRegex);
    } catch (error) {
      throw new Failure(
        'fix-input',
        `${where}: path_regex ${JSON.stringify(pathRegex)} is not a regular expression (${(error as Error).message})`,
      );
    }
  }
  let listed: string[];
  if (age === undefined || age === null) listed = [];
  else if (typeof age === 'string') listed = splitRecipientList(age);
  else if (Array.isArray(age) && age.every((entry) => typeof entry === 'string'))
    listed = age.flatMap((entry: string) => splitRecipientList(entry));
  else throw new Failure('fix-input', `${where}: age must be a string or a list of strings`);
  const others = OTHER_KEY_TYPES.filter((key) => (rule as Record<string, unknown>)[key] !== undefined);
  if (listed.length === 0 && others.length > 0) {
    throw new Failure(
      'fix-input',
      `${where} uses ${others.join(', ')}; clusterstack encrypts for age recipients only: add an age entry to the rule, or pass --age-recipient`,
    );
  }
  return {
    ...(typeof pathRegex === 'string' && pathRegex !== '' ? { pathRegex } : {}),
    recipients: listed.length > 0 ? checkAgeRecipients(listed, where) : [],
  };
}

/** The recipients for a tree path: those of the first rule that matches; throws a fix-input Failure when none does or it names none. */
export function recipientsForPath(rules: SopsCreationRule[], file: string, origin: string): string[] {
  const index = rules.findIndex((rule) => rule.pathRegex === undefined || new RegExp(rule.pathRegex).test(file));
  if (index < 0)
    throw new Failure(
      'fix-input',
      `${origin}: no creation rule matches ${file}; add a rule whose path_regex matches it (or one without path_regex), or pass --age-recipient`,
    );
  const rule = rules[index]!;
  if (rule.recipients.length === 0)
    throw new Failure('fix-input', `${origin} creation_rules[${index}] matches ${file} but names no age recipients`);
  return rule.recipients;
}
