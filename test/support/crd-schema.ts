// Reads our CustomResourceDefinitions as files: structural-schema rules (including what the API
// server would accept but ignore), where CEL rules and printer columns point, and the fields
// compared with src/api/types.ts. It admits no objects: validation, defaulting, pruning and the CEL
// rules are the real API server's (test/real-server-validation.test.ts), which also refuses a CRD
// whose defaults do not validate when the tests install it.
import { readFileSync } from 'node:fs';
import * as yaml from 'js-yaml';
import ts from 'typescript';

/** One node of an openAPIV3Schema (apiextensions.k8s.io/v1 JSONSchemaProps), loosely typed. */
export interface SchemaProps {
  type?: string;
  description?: string;
  properties?: Record<string, SchemaProps>;
  additionalProperties?: SchemaProps | boolean;
  items?: SchemaProps;
  required?: string[];
  default?: unknown;
  enum?: unknown[];
  pattern?: string;
  format?: string;
  nullable?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: string;
  'x-kubernetes-validations'?: ValidationRule[];
  [key: string]: unknown;
}

export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  reason?: string;
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description?: string;
  format?: string;
  priority?: number;
}

interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
  subresources?: { status?: object; scale?: object };
  additionalPrinterColumns?: PrinterColumn[];
  schema: { openAPIV3Schema: SchemaProps };
}

export interface CustomResourceDefinition {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: {
    group: string;
    scope: string;
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames?: string[];
      categories?: string[];
    };
    versions: CrdVersion[];
  };
}

/** Loads one CRD file; throws if it is not exactly one CustomResourceDefinition. */
export function loadCrd(file: string): CustomResourceDefinition {
  const docs = yaml.loadAll(readFileSync(file, 'utf8')).filter((doc) => doc != null);
  if (docs.length !== 1) throw new Error(`${file}: expected one document, found ${docs.length}`);
  const crd = docs[0] as CustomResourceDefinition;
  if (crd.kind !== 'CustomResourceDefinition')
    throw new Error(`${file}: kind is ${String(crd.kind)}, not CustomResourceDefinition`);
  return crd;
}

/** The openAPIV3Schema of the named version; throws if the CRD has no such version. */
export function versionSchema(crd: CustomResourceDefinition, version: string): SchemaProps {
  const found = crd.spec.versions.find((v) => v.name === version);
  if (!found) throw new Error(`${crd.metadata.name} has no version ${version}`);
  return found.schema.openAPIV3Schema;
}

// ---------------------------------------------------------------------------------------------
// Walking

export interface SchemaNode {
  /** `.spec.versions[*]` style: `[*]` for array items, `{*}` for additionalProperties values. */
  path: string;
  schema: SchemaProps;
  /** From the root down to the parent, each with how this node hangs off it. */
  ancestors: Array<{ node: SchemaNode; via: 'property' | 'items' | 'additionalProperties'; key?: string }>;
}

/** Visits every node of a schema, depth first, the root first. */
function walkSchema(root: SchemaProps, visit: (node: SchemaNode) => void): void {
  const go = (node: SchemaNode): void => {
    visit(node);
    const step = (
      schema: SchemaProps,
      path: string,
      via: 'property' | 'items' | 'additionalProperties',
      key?: string,
    ): void => {
      go({ path, schema, ancestors: [...node.ancestors, { node, via, ...(key === undefined ? {} : { key }) }] });
    };
    for (const [key, child] of Object.entries(node.schema.properties ?? {}))
      step(child, `${node.path}.${key}`, 'property', key);
    if (node.schema.items && typeof node.schema.items === 'object') step(node.schema.items, `${node.path}[*]`, 'items');
    if (node.schema.additionalProperties && typeof node.schema.additionalProperties === 'object') {
      step(node.schema.additionalProperties, `${node.path}{*}`, 'additionalProperties');
    }
  };
  go({ path: '', schema: root, ancestors: [] });
}

/** The node at a walk path such as `.spec.provider` or `.status.conditions[*]`, if any. */
export function schemaAt(root: SchemaProps, path: string): SchemaProps | undefined {
  let found: SchemaProps | undefined;
  walkSchema(root, (node) => {
    if (node.path === path) found = node.schema;
  });
  return found;
}

// ---------------------------------------------------------------------------------------------
// Structural schema rules (apiextensions.k8s.io/v1)

// Keys the API server refuses anywhere in a v1 CRD schema.
const FORBIDDEN_KEYS = [
  '$ref',
  '$schema',
  'definitions',
  'dependencies',
  'deprecated',
  'discriminator',
  'id',
  'patternProperties',
  'readOnly',
  'writeOnly',
  'xml',
];
const RULE_KEYS = new Set(['rule', 'message', 'messageExpression', 'reason', 'fieldPath', 'optionalOldSelf']);
const RULE_REASONS = new Set(['FieldValueInvalid', 'FieldValueForbidden', 'FieldValueRequired', 'FieldValueDuplicate']);
const JSON_TYPES = new Set(['object', 'array', 'string', 'integer', 'number', 'boolean']);

/**
 * What makes a schema non-structural or otherwise refused (or silently useless) in a v1 CRD.
 * Empty means fine. Every message names the offending path.
 */
export function structuralProblems(root: SchemaProps): string[] {
  const problems: string[] = [];
  if (root.type !== 'object') problems.push('(root): type must be object');
  walkSchema(root, ({ path, schema, ancestors }) => {
    const at = path || '(root)';
    const untyped =
      schema['x-kubernetes-int-or-string'] === true || schema['x-kubernetes-preserve-unknown-fields'] === true;
    if (schema.type === undefined && !untyped) problems.push(`${at}: has no type`);
    if (schema.type !== undefined && !JSON_TYPES.has(schema.type)) problems.push(`${at}: unknown type ${schema.type}`);
    for (const key of FORBIDDEN_KEYS) if (key in schema) problems.push(`${at}: ${key} is not allowed in a CRD schema`);
    if (schema.uniqueItems === true)
      problems.push(`${at}: uniqueItems: true is not allowed; use x-kubernetes-list-type: set`);
    if (schema.additionalProperties === false)
      problems.push(`${at}: additionalProperties: false is not allowed; unknown fields are pruned anyway`);
    if (schema.properties && schema.additionalProperties !== undefined)
      problems.push(`${at}: properties and additionalProperties are mutually exclusive`);
    if (schema.type === 'array' && !schema.items) problems.push(`${at}: an array needs items`);
    if (Array.isArray(schema.items)) problems.push(`${at}: items must be one schema, not a tuple`);
    const isMetadata = ancestors.length === 1 && path === '.metadata';
    if (
      schema.type === 'object' &&
      !isMetadata &&
      !schema.properties &&
      schema.additionalProperties === undefined &&
      schema['x-kubernetes-preserve-unknown-fields'] !== true &&
      schema['x-kubernetes-embedded-resource'] !== true
    ) {
      problems.push(
        `${at}: an object without properties, additionalProperties or x-kubernetes-preserve-unknown-fields loses all its content to pruning`,
      );
    }
    if (isMetadata) {
      const extra = Object.keys(schema).filter((key) => !['type', 'description', 'properties'].includes(key));
      if (extra.length > 0)
        problems.push(`.metadata: only name and generateName may be constrained, found ${extra.join(', ')}`);
      const fields = Object.keys(schema.properties ?? {}).filter((key) => key !== 'name' && key !== 'generateName');
      if (fields.length > 0)
        problems.push(`.metadata: only name and generateName may be constrained, found ${fields.join(', ')}`);
    }
    for (const value of schema.enum ?? []) {
      if (!matchesType(value, schema.type))
        problems.push(`${at}: enum value ${JSON.stringify(value)} is not a ${schema.type}`);
    }
    for (const key of schema.required ?? []) {
      if (!schema.properties?.[key]) problems.push(`${at}: requires ${key}, which is not a property`);
    }
    const listType = schema['x-kubernetes-list-type'];
    if (listType !== undefined && !['atomic', 'set', 'map'].includes(listType))
      problems.push(`${at}: unknown x-kubernetes-list-type ${listType}`);
    if (listType !== undefined && schema.type !== 'array')
      problems.push(`${at}: x-kubernetes-list-type on a non-array`);
    const mapKeys = schema['x-kubernetes-list-map-keys'];
    if ((mapKeys !== undefined) !== (listType === 'map'))
      problems.push(`${at}: x-kubernetes-list-map-keys goes with x-kubernetes-list-type: map, and only with it`);
    for (const key of mapKeys ?? []) {
      const item = schema.items;
      if (!item?.properties?.[key]) problems.push(`${at}: list map key ${key} is not an item property`);
      else if (!item.required?.includes(key) && item.properties[key]?.default === undefined) {
        problems.push(`${at}: list map key ${key} must be required or defaulted in the items`);
      }
    }
    for (const [index, rule] of (schema['x-kubernetes-validations'] ?? []).entries()) {
      const where = `${at}: x-kubernetes-validations[${index}]`;
      if (typeof rule.rule !== 'string' || rule.rule.trim() === '') problems.push(`${where} has no rule`);
      const unknown = Object.keys(rule).filter((key) => !RULE_KEYS.has(key));
      if (unknown.length > 0) problems.push(`${where} has unknown keys ${unknown.join(', ')}`);
      if (rule.reason !== undefined && !RULE_REASONS.has(rule.reason))
        problems.push(`${where} has unknown reason ${rule.reason}`);
      if (!rule.message && !rule.messageExpression)
        problems.push(`${where} has no message; users would see the bare rule`);
      if (rule.message?.includes('\n')) problems.push(`${where}: a message must not contain line breaks`);
      if (rule.fieldPath !== undefined && !fieldPathExists(schema, rule.fieldPath))
        problems.push(`${where}: fieldPath ${rule.fieldPath} is not a field here`);
    }
  });
  return problems;
}

// fieldPath is relative to the node carrying the rule, child steps only (`.a.b`).
function fieldPathExists(schema: SchemaProps, fieldPath: string): boolean {
  const steps = /^(\.[A-Za-z0-9_]+)+$/.test(fieldPath) ? fieldPath.slice(1).split('.') : undefined;
  if (!steps) return false;
  let node: SchemaProps | undefined = schema;
  for (const step of steps) node = node?.properties?.[step];
  return node !== undefined;
}

function matchesType(value: unknown, type: string | undefined): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'boolean':
      return typeof value === 'boolean';
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    default:
      return true;
  }
}

// ---------------------------------------------------------------------------------------------
// CEL rules

export interface PlacedRule extends ValidationRule {
  /** The walk path of the node carrying the rule. */
  path: string;
  node: SchemaNode;
}

/** Every x-kubernetes-validations rule with the path of the node it sits on. */
export function celRules(root: SchemaProps): PlacedRule[] {
  const rules: PlacedRule[] = [];
  walkSchema(root, (node) => {
    for (const rule of node.schema['x-kubernetes-validations'] ?? []) rules.push({ ...rule, path: node.path, node });
  });
  return rules;
}

/** A transition rule compares with the old object; the server only runs it when both exist. */
export function isTransitionRule(rule: ValidationRule): boolean {
  return /\boldSelf\b/.test(rule.rule) && rule.optionalOldSelf !== true;
}

/**
 * Why a transition rule at this node could be skipped: the node, or a parent on the way from the
 * root, is neither required nor defaulted (so an update can remove it and the rule never runs), or
 * it sits in a list whose old and new items cannot be correlated. Undefined when it always runs.
 */
export function transitionRuleGap(node: SchemaNode): string | undefined {
  const chain = [...node.ancestors, { node, via: undefined, key: undefined }];
  for (let i = 1; i < chain.length; i += 1) {
    const parent = chain[i - 1]!;
    const child = chain[i]!.node;
    if (parent.via === 'property') {
      const key = parent.key!;
      const required = parent.node.schema.required?.includes(key) ?? false;
      if (!required && child.schema.default === undefined) return `${child.path} is optional and has no default`;
    } else if (parent.via === 'items') {
      const listType = parent.node.schema['x-kubernetes-list-type'];
      if (listType !== 'map' && listType !== 'set')
        return `${child.path} is in a ${listType ?? 'atomic'} list, whose items are not correlated`;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Printer columns

const OBJECT_META_FIELDS: Record<string, string> = {
  name: 'string',
  generateName: 'string',
  namespace: 'string',
  uid: 'string',
  resourceVersion: 'string',
  generation: 'integer',
  creationTimestamp: 'date-time',
  deletionTimestamp: 'date-time',
  labels: 'object',
  annotations: 'object',
  ownerReferences: 'array',
  finalizers: 'array',
};

/**
 * Resolves a printer column jsonPath (`.spec.x`, `.status.conditions[?(@.type=='Ready')].reason`,
 * `.metadata.creationTimestamp`) against the schema and returns the schema type it ends at
 * (`date-time` for date-time strings), or a problem.
 */
export function resolveColumnPath(root: SchemaProps, jsonPath: string): { type: string } | { problem: string } {
  const tokens = jsonPath.match(/\.[A-Za-z0-9_-]+|\[[^\]]*\]/g);
  if (!jsonPath.startsWith('.') || !tokens || tokens.join('') !== jsonPath)
    return { problem: `cannot parse ${jsonPath}` };
  let node: SchemaProps = root;
  for (const [index, token] of tokens.entries()) {
    if (token.startsWith('.')) {
      const key = token.slice(1);
      if (index === 0 && key === 'metadata') {
        const field = tokens[1]?.slice(1);
        const type = field === undefined ? 'object' : OBJECT_META_FIELDS[field];
        if (type === undefined || tokens.length > 2)
          return { problem: `${jsonPath}: ${field ?? ''} is not an ObjectMeta field this check knows` };
        return { type };
      }
      const next =
        node.properties?.[key] ??
        (typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined);
      if (!next) return { problem: `${jsonPath}: ${key} is not in the schema` };
      node = next;
    } else {
      if (node.type !== 'array' || !node.items) return { problem: `${jsonPath}: ${token} indexes a non-array` };
      const filter = /^\[\?\(@\.([A-Za-z0-9_]+)\s*==\s*(['"])[^'"]*\2\)\]$/.exec(token);
      if (filter && !node.items.properties?.[filter[1]!])
        return { problem: `${jsonPath}: filter field ${filter[1]} is not an item property` };
      if (!filter && !/^\[(\*|\d+)\]$/.test(token)) return { problem: `${jsonPath}: unsupported ${token}` };
      node = node.items;
    }
  }
  return { type: node.format === 'date-time' ? 'date-time' : (node.type ?? 'any') };
}

// ---------------------------------------------------------------------------------------------
// The TypeScript API types, read from source

export interface TypeField {
  name: string;
  optional: boolean;
  /** The schema type the field's TypeScript type maps to; undefined when it cannot tell. */
  schemaTypes?: string[];
  /** For unions of string literals (directly or through an alias): the allowed values. */
  literals?: string[];
}

/**
 * Reads interfaces from a TypeScript source file (src/api/types.ts) so the CRD schemas can be
 * checked against the types the code uses. Only what the API types need is understood.
 */
export class TypeSource {
  private readonly interfaces = new Map<string, ts.InterfaceDeclaration>();
  private readonly aliases = new Map<string, ts.TypeAliasDeclaration>();

  constructor(file: string) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    for (const statement of source.statements) {
      if (ts.isInterfaceDeclaration(statement)) this.interfaces.set(statement.name.text, statement);
      if (ts.isTypeAliasDeclaration(statement)) this.aliases.set(statement.name.text, statement);
    }
  }

  /** The fields of an interface; throws if there is no such interface. */
  fields(name: string): TypeField[] {
    const declaration = this.interfaces.get(name);
    if (!declaration) throw new Error(`no interface ${name}`);
    const fields: TypeField[] = [];
    for (const member of declaration.members) {
      if (!ts.isPropertySignature(member) || !member.type) continue;
      const literals = this.stringLiterals(member.type);
      const schemaTypes = literals ? ['string'] : this.schemaTypes(member.type);
      fields.push({
        name: member.name.getText(),
        optional: member.questionToken !== undefined,
        ...(schemaTypes ? { schemaTypes } : {}),
        ...(literals ? { literals } : {}),
      });
    }
    return fields;
  }

  private stringLiterals(type: ts.TypeNode): string[] | undefined {
    if (ts.isLiteralTypeNode(type) && ts.isStringLiteral(type.literal)) return [type.literal.text];
    if (ts.isUnionTypeNode(type)) {
      const parts = type.types.map((part) => this.stringLiterals(part));
      return parts.every((part) => part !== undefined) ? parts.flat() : undefined;
    }
    if (ts.isTypeReferenceNode(type) && ts.isIdentifier(type.typeName)) {
      const alias = this.aliases.get(type.typeName.text);
      return alias ? this.stringLiterals(alias.type) : undefined;
    }
    return undefined;
  }

  private schemaTypes(type: ts.TypeNode): string[] | undefined {
    switch (type.kind) {
      case ts.SyntaxKind.StringKeyword:
        return ['string'];
      case ts.SyntaxKind.BooleanKeyword:
        return ['boolean'];
      case ts.SyntaxKind.NumberKeyword:
        return ['integer', 'number'];
      case ts.SyntaxKind.ArrayType:
        return ['array'];
      case ts.SyntaxKind.TypeLiteral:
        return ['object'];
      case ts.SyntaxKind.TypeQuery:
        return ['string'];
      default:
        break;
    }
    if (ts.isTypeReferenceNode(type) && ts.isIdentifier(type.typeName)) {
      const name = type.typeName.text;
      if (name === 'Record' || this.interfaces.has(name)) return ['object'];
      if (name === 'Array') return ['array'];
      const alias = this.aliases.get(name);
      if (alias) return this.schemaTypes(alias.type);
    }
    return undefined;
  }
}

export interface CompareOptions {
  /** Fields the API server always sets, so the schema need not require them (apiVersion, kind, metadata). */
  serverSet?: string[];
}

/**
 * Differences between a schema object node and a TypeScript interface: fields only on one side,
 * required-ness that disagrees, mismatching types and enums. Empty when they agree.
 */
export function compareWithType(
  node: SchemaProps,
  fields: TypeField[],
  path: string,
  options: CompareOptions = {},
): string[] {
  const problems: string[] = [];
  const properties = node.properties ?? {};
  const required = new Set(node.required ?? []);
  for (const field of fields) {
    const at = `${path}.${field.name}`;
    const property = properties[field.name];
    if (!property) {
      problems.push(`${at} is in the type but not in the schema`);
      continue;
    }
    const serverSet = options.serverSet?.includes(field.name) ?? false;
    if (!field.optional && !serverSet && !required.has(field.name))
      problems.push(`${at} is required in the type but not in the schema`);
    if (field.optional && required.has(field.name))
      problems.push(`${at} is optional in the type but required in the schema`);
    if (field.schemaTypes && property.type !== undefined && !field.schemaTypes.includes(property.type)) {
      problems.push(`${at} is ${field.schemaTypes.join('/')} in the type but ${property.type} in the schema`);
    }
    if (field.literals && !serverSet) {
      const schemaEnum = (property.enum ?? []).map(String).sort();
      const literals = [...field.literals].sort();
      if (JSON.stringify(schemaEnum) !== JSON.stringify(literals)) {
        problems.push(
          `${at} allows ${JSON.stringify(literals)} in the type but ${JSON.stringify(schemaEnum)} in the schema`,
        );
      }
    }
  }
  const known = new Set(fields.map((field) => field.name));
  for (const key of Object.keys(properties))
    if (!known.has(key)) problems.push(`${path}.${key} is in the schema but not in the type`);
  return problems;
}
