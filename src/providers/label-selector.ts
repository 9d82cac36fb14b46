// Kubernetes label selectors, both forms: the string form of a patch target (`a=b,c!=d,e in (x,y),!f`)
// and the object form of fetchConfig.selector (matchLabels, matchExpressions). Pure.

export type LabelRequirement = { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values: string[] };

/** Parses the string form; throws with the requirement that does not parse. */
export function parseLabelSelector(text: string): LabelRequirement[] {
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
  return parts
    .filter((part) => part !== '')
    .map((part) => {
      let match = /^!\s*([\w./-]+)$/.exec(part);
      if (match) return { key: match[1]!, operator: 'DoesNotExist', values: [] };
      match = /^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$/.exec(part);
      if (match) return { key: match[1]!, operator: match[2] === '!=' ? 'NotIn' : 'In', values: [match[3]!] };
      match = /^([\w./-]+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(part);
      if (match) return { key: match[1]!, operator: match[2] === 'in' ? 'In' : 'NotIn', values: match[3]!.split(',').map((value) => value.trim()) };
      match = /^([\w./-]+)$/.exec(part);
      if (match) return { key: match[1]!, operator: 'Exists', values: [] };
      throw new Error(`cannot parse "${part}"; expected key=value, key!=value, key in (a,b), key notin (a,b), key or !key`);
    });
}

/** The object form as requirements (matchExpressions operators as Kubernetes spells them). */
export function requirementsOf(selector: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] }): LabelRequirement[] {
  const requirements: LabelRequirement[] = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => ({ key, operator: 'In', values: [String(value)] }));
  for (const expression of selector.matchExpressions ?? []) {
    if (!['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(expression.operator)) throw new Error(`matchExpressions operator ${JSON.stringify(expression.operator)} must be In, NotIn, Exists or DoesNotExist`);
    requirements.push({ key: expression.key, operator: expression.operator as LabelRequirement['operator'], values: expression.values ?? [] });
  }
  return requirements;
}

/** True when `labels` satisfy every requirement. */
export function matchesLabelSelector(requirements: LabelRequirement[], labels: Record<string, string>): boolean {
  return requirements.every((requirement) => {
    const has = Object.hasOwn(labels, requirement.key);
    switch (requirement.operator) {
      case 'In':
        return has && requirement.values.includes(labels[requirement.key]!);
      case 'NotIn':
        return !has || !requirement.values.includes(labels[requirement.key]!);
      case 'Exists':
        return has;
      case 'DoesNotExist':
        return !has;
    }
  });
}
