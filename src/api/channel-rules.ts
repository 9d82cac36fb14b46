// The ClusterStack's channel rules, said once for both places that enforce them: validate.ts (the
// controller and the CLI) and the CEL rules of the ClusterStack CRD (the API server, at admission).
// test/crds.test.ts checks that the CRD carries exactly these rules and evaluates them with a CEL
// implementation on valid and invalid objects, against the messages of validate.ts.

/** A channel name: stable, custom, or a pre-release channel such as alpha. */
export const CHANNEL_PATTERN = '^[a-z][a-z0-9]*$';

/**
 * The most versions a ClusterStack lists (the CRD's maxItems): the API server refuses a CEL rule
 * over a list whose cost it cannot bound.
 */
export const MAX_VERSIONS = 100;

/** A version in dot form: v3, v1-alpha.5, v0-sha.abc1234. */
const VERSION_PATTERN = '^v(0|[1-9][0-9]*)(-[a-z][a-z0-9]*[.][a-z0-9]+)?$';

const CHANNEL_HINT = 'must be stable, custom or a pre-release channel name such as alpha';

/** What validate.ts says of a channel that is not a channel name. */
export function unknownChannelMessage(found: unknown): string {
  return `${CHANNEL_HINT}, found ${JSON.stringify(found)}`;
}

/** What validate.ts says of a version of another channel than the stack's. */
export function channelContradictionMessage(version: string, versionChannel: string, stackChannel: string): string {
  return `${version} belongs to the ${versionChannel} channel, but this ClusterStack follows ${stackChannel}; list only ${stackChannel} versions or change spec.channel`;
}

// CEL of the same: the channel of a well-formed version (stable without a label, custom for the
// hash label `sha`, else its label), and the stack's channel (stable when unset).
const versionChannel = (v: string) => `(!${v}.contains('-') ? 'stable' : ${v}.split('-')[1].split('.')[0] == 'sha' ? 'custom' : ${v}.split('-')[1].split('.')[0])`;
const STACK_CHANNEL = "(has(self.channel) ? self.channel : 'stable')";
const contradicts = (v: string) => `${v}.matches('${VERSION_PATTERN}') && ${versionChannel(v)} != ${STACK_CHANNEL}`;

/** One x-kubernetes-validations entry. */
export interface CelRule {
  rule: string;
  messageExpression: string;
  reason?: string;
  fieldPath?: string;
}

/** On spec.channel: a channel name, said as validate.ts says it (JSON quotes around the value found). */
export const CHANNEL_CEL_RULE: CelRule = {
  rule: `self.matches('${CHANNEL_PATTERN}')`,
  // JSON.stringify of a channel-like string is the string in double quotes.
  messageExpression: celMessage(`${CHANNEL_HINT}, found "\u0001"`, { '\u0001': 'self' }),
  reason: 'FieldValueInvalid',
};

/** On spec: every version belongs to the stack's channel; the message names the first that does not. */
export const VERSIONS_CHANNEL_CEL_RULE: CelRule = {
  rule: `!has(self.versions) || !self.versions.exists(v, ${contradicts('v')})`,
  messageExpression: `self.versions.filter(v, ${contradicts('v')}).map(v, ${celMessage(channelContradictionMessage('\u0001', '\u0002', '\u0003'), { '\u0001': 'v', '\u0002': versionChannel('v'), '\u0003': STACK_CHANNEL })})[0]`,
  reason: 'FieldValueInvalid',
  fieldPath: '.versions',
};

/** A CEL string expression for `template`, with each placeholder character replaced by its CEL expression. */
function celMessage(template: string, parts: Record<string, string>): string {
  const terms: string[] = [];
  let literal = '';
  for (const char of template) {
    if (!(char in parts)) {
      literal += char === "'" ? "\\'" : char;
      continue;
    }
    if (literal) terms.push(`'${literal}'`);
    terms.push(parts[char]!);
    literal = '';
  }
  if (literal) terms.push(`'${literal}'`);
  return terms.join(' + ');
}
