// Evaluates the addon values templates of published cluster stacks (`cluster-addon-values.yaml`,
// a stage's `overwrite.yaml`): Go templates over `.Cluster`, `.ControlPlane` and `.InfraCluster`,
// with every Helm and sprig function. Helm is the only faithful engine for them, so they run in
// helm, many per process:
//
// 1. Every field chain is rewritten to fail on a missing key (go-template-strict.ts explains why the
//    helm CLI cannot be asked for that, and how the rewrite works).
// 2. The context reaches helm as JSON (a `fromJson` literal in lint, values.yaml in template), which
//    Go decodes with float64 numbers. So integers travel as decimal strings, and actions generated
//    from their positions turn them into int64 before each item runs (go-template-int64.ts): the
//    template sees what the cluster-stack-operator's unstructured objects hold, int64 integers
//    (exact beyond 2^53), float64 floats, strings as strings.
// 3. Optimistic pass: `helm template` of ONE chart holding every item, each template a partial
//    included once per context. The output of each item is base64 encoded, so a template that
//    prints `---`, `# Source:` or YAML helm would choke on cannot disturb the split. Usually every
//    item succeeds and this is the batch's only helm process.
// 4. Only when it fails: `helm lint` over one throwaway chart per (template, context) pair, all in
//    ONE process. Lint renders each chart on its own and reports every chart's first error, where
//    `helm template` stops the whole batch at the first failing item. Lint mode turns `required`
//    and `fail` into log lines instead of errors; a `required "cs-begin:<n>" nil` in front of each
//    item tags those lines with the item they belong to, so they withhold it as helm template would.
//    Then `helm template` again over the items lint passed.
//
// Each step was verified against helm 3.10.1 and again against every supported helm (3.22.0 and
// 4.3.1; the suite runs on each): all of it is still needed there. Helm 4 words execution errors and
// lint's log lines differently; helm-error-text.ts reads them back into helm 3's words.
//
// So a batch costs one helm process when nothing fails and three at most whatever fails in it. If
// the last template pass still stops (lint and template disagree on something unforeseen), the item
// named in the error is withheld and the rest re-rendered: bounded by the number of items, and in
// practice never taken.
//
// 5. A template that never ends (a loop, a recursive include) holds its whole batch: every helm
//    process runs under the values time limit, and a batch that runs out is evaluated again one item
//    per process, so only the item that loops fails (with a message naming the limit's flag and
//    variable) and the others of its batch get their values.
import type { ValuesTemplateItem } from '../src/render/render-dependencies.js';
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_HELM_TIMEOUTS, HELM_TIMEOUT_SETTINGS } from '../src/config.js';
import { cleanHelmStderr, formatHelmLimit, HelmRenderError, HelmTimeoutError } from './helm-errors.js';
import { helm3ExecErrors, lintLogMessage } from './helm-error-text.js';
import { type HelmRunner, VALUES_PRIORITY } from './helm-runner.js';
import { helmKubeVersion } from './helm-renderer.js';
import { sortKeysDeep } from '../src/core/sort-keys.js';
import { makePrivateDir, writePrivateFile } from '../src/cache/private-cache-file.js';
import { decodeYamlDocuments, YamlDecodeError } from '../src/yaml/kube-yaml.js';
import { encodeInt64s, restoreInt64s, type Int64Positions } from './go-template-int64.js';
import {
  parseMissingMarker,
  PRESENT_DEFINITION,
  strictFieldAccess,
  type StrictTemplate,
} from './go-template-strict.js';
import { Failure } from '../src/core/failure.js';

/** The core's ValuesTemplateResult, with helm's own error type on failures. */
export type ValuesTemplateResult =
  | { id: string; ok: true; values: Record<string, unknown> }
  | { id: string; ok: false; missingField?: string; timedOut?: true; message: string; error: ValuesTemplateError };

export type ValuesTemplateFailure = 'MissingField' | 'TemplateError' | 'InvalidResult' | 'Timeout';

/** One item's template could not give values: the cluster lacks a field, or the template is wrong. */
export class ValuesTemplateError extends Failure {
  constructor(
    readonly origin: string,
    readonly reason: ValuesTemplateFailure,
    readonly detail: string,
    readonly line?: number,
    readonly missingField?: string,
  ) {
    super('fix-input', `${origin}${line ? ` line ${line}` : ''}: ${detail}`);
    this.name = 'ValuesTemplateError';
  }
}

/** Items per helm process; far below any argument-list limit. */
const BATCH_LIMIT = 400;
const CHART = 'cs-values';
const LINT_DEFINE = 'cs-values-template';
/** Names of the defines converting a context's integers (one per distinct set of positions). */
const INT64_PREFIX = 'cs-int64-';

/**
 * Evaluates every item's template against its context; one result per item, in order. An item
 * reading a field its objects do not have fails alone (`missingField` names it); the others are
 * unaffected; so does an item whose template runs past `timeoutMs` (`timedOut`). Identical
 * (template, context) pairs are evaluated once. Rejects only when helm itself cannot run.
 */
export async function evaluateValuesTemplates(
  runner: HelmRunner,
  items: ValuesTemplateItem[],
  kubeVersion?: string,
  options: { timeoutMs?: number } = {},
): Promise<ValuesTemplateResult[]> {
  const limit: TimeLimit = {
    timeoutMs: options.timeoutMs ?? DEFAULT_HELM_TIMEOUTS.valuesMs,
    timeoutSetting: HELM_TIMEOUT_SETTINGS.values,
  };
  const results: (ValuesTemplateResult | undefined)[] = new Array(items.length);
  const templates = new Map<string, CompiledTemplate>();
  const units = new Map<string, Unit>();
  for (const [index, item] of items.entries()) {
    if (item.template.trim() === '') {
      results[index] = { id: item.id, ok: true, values: {} };
      continue;
    }
    let compiled = templates.get(item.template);
    if (!compiled) {
      compiled = { index: templates.size, strict: strictFieldAccess(item.template) };
      templates.set(item.template, compiled);
    }
    const { context, positions } = templateContext(item.context);
    // Both halves: the same digits are an integer in one context and a string in another.
    const key = `${compiled.index}:${sha256(JSON.stringify([context, positions ?? null]))}`;
    let unit = units.get(key);
    if (!unit) {
      unit = { template: compiled, context, positions, items: [] };
      units.set(key, unit);
    }
    unit.items.push(index);
  }

  const outcomes = new Map<Unit, Outcome>();
  await Promise.all(
    planBatches([...units.values()]).map(async (batch) => {
      for (const [unit, outcome] of await evaluateWithin(runner, batch, kubeVersion, limit))
        outcomes.set(unit, outcome);
    }),
  );

  for (const unit of units.values()) {
    const outcome = outcomes.get(unit);
    for (const index of unit.items) {
      const item = items[index]!;
      results[index] = outcome
        ? toResult(item, outcome)
        : failed(item, new ValuesTemplateError(item.origin, 'TemplateError', 'helm gave no result for this item'));
    }
  }
  return results as ValuesTemplateResult[];
}

interface CompiledTemplate {
  index: number;
  strict: StrictTemplate;
}

interface Unit {
  template: CompiledTemplate;
  /** The context with integers as decimal strings (plain JSON); `positions` says which. */
  context: Record<string, unknown>;
  positions?: Int64Positions;
  /** Indexes of the items this (template, context) pair stands for. */
  items: number[];
}

/** What helm made of one unit: its raw output, or a failure still without an origin. */
type Outcome =
  | { ok: true; output: string }
  | { ok: false; reason: ValuesTemplateFailure; detail: string; line?: number; missingField?: string };

/** The limit every values process runs under, and the setting that names it. */
interface TimeLimit {
  timeoutMs: number;
  timeoutSetting: string;
}

/**
 * The context as helm will see it: sorted keys (stable dedup keys and files), no null-valued keys
 * (helm's values handling deletes them, so they are absent in every pass alike), absent objects
 * left out (so reading them is a missing field), and `.Template` so that `tpl "..." .` works.
 * Integers (number or bigint) become decimal strings plus their positions (go-template-int64.ts),
 * so the result serializes with JSON.stringify and helm turns them back into int64.
 */
function templateContext(context: ValuesTemplateItem['context']): {
  context: Record<string, unknown>;
  positions?: Int64Positions;
} {
  const result: Record<string, unknown> = {};
  for (const key of ['Cluster', 'ControlPlane', 'InfraCluster'] as const) {
    if (context[key] !== undefined && context[key] !== null) result[key] = withoutNullKeys(sortKeysDeep(context[key]));
  }
  result['Template'] = { BasePath: `${CHART}/templates`, Name: `${CHART}/templates/values-template` };
  const encoded = encodeInt64s(result);
  return {
    context: encoded.value as Record<string, unknown>,
    ...(encoded.positions !== undefined ? { positions: encoded.positions } : {}),
  };
}

function withoutNullKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNullKeys);
  if (value !== null && typeof value === 'object') {
    const result: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value))
      if (inner !== null && inner !== undefined) result[key] = withoutNullKeys(inner);
    return result;
  }
  return value;
}

/** Splits units into batches; templates that define the same names never share a helm render. */
function planBatches(units: Unit[]): Unit[][] {
  interface Batch {
    units: Unit[];
    templates: Set<CompiledTemplate>;
    defines: Map<string, CompiledTemplate>;
  }
  const batches: Batch[] = [];
  for (const unit of units) {
    const fits = batches.find(
      (batch) =>
        batch.units.length < BATCH_LIMIT &&
        (batch.templates.has(unit.template) ||
          unit.template.strict.defines.every((name) => (batch.defines.get(name) ?? unit.template) === unit.template)),
    );
    const batch: Batch = fits ?? { units: [], templates: new Set(), defines: new Map() };
    if (!fits) batches.push(batch);
    batch.units.push(unit);
    batch.templates.add(unit.template);
    for (const name of unit.template.strict.defines) batch.defines.set(name, unit.template);
  }
  return batches.map((batch) => batch.units);
}

/**
 * Step 5: a batch whose helm runs out of time is evaluated again one unit per process (all at once,
 * as the runner's slots allow), so only a unit that loops fails, with the time limit as its reason.
 */
async function evaluateWithin(
  runner: HelmRunner,
  units: Unit[],
  kubeVersion: string | undefined,
  limit: TimeLimit,
): Promise<Map<Unit, Outcome>> {
  try {
    return await evaluateBatch(runner, units, kubeVersion, limit);
  } catch (error) {
    if (!(error instanceof HelmTimeoutError)) throw error;
    if (units.length === 1) {
      return new Map([
        [
          units[0]!,
          {
            ok: false,
            reason: 'Timeout',
            detail: `did not finish within ${formatHelmLimit(limit.timeoutMs)} and was stopped: a template that never ends (a loop, a recursive include) is the usual cause; fix it, or if it really needs longer raise ${limit.timeoutSetting}`,
          },
        ],
      ]);
    }
    const alone = await Promise.all(units.map((unit) => evaluateWithin(runner, [unit], kubeVersion, limit)));
    return new Map(alone.flatMap((outcomes) => [...outcomes]));
  }
}

async function evaluateBatch(
  runner: HelmRunner,
  units: Unit[],
  kubeVersion: string | undefined,
  limit: TimeLimit,
): Promise<Map<Unit, Outcome>> {
  return runner.withTempDir('values', async (dir) => {
    // Optimistic pass: usually every item succeeds, and one `helm template` is all it takes.
    // Only when something fails do lint (which attributes every failure at once) and a second
    // template pass run: three processes at most, however many items fail.
    const optimistic = await renderUnits(runner, units, path.join(dir, 'optimistic'), kubeVersion, limit, {
      stopAtFirstFailure: true,
    });
    if (optimistic) return optimistic;
    const outcomes = new Map<Unit, Outcome>();
    for (const [unit, outcome] of await lintUnits(runner, units, path.join(dir, 'lint'), limit))
      outcomes.set(unit, outcome);
    const passed = units.filter((unit) => !outcomes.has(unit));
    for (const [unit, outcome] of await renderUnits(runner, passed, path.join(dir, 'render'), kubeVersion, limit))
      outcomes.set(unit, outcome);
    return outcomes;
  });
}

const chartYaml = `apiVersion: v2\nname: ${CHART}\nversion: 0.0.0\ndescription: values templates evaluated by clusterstack-gitops\n`;
const partialName = (template: CompiledTemplate) => `_t${template.index}.tpl`;
const includeOf = (template: CompiledTemplate, values: string) =>
  `include "${CHART}/templates/${partialName(template)}" ${values}`;

/**
 * Step 4: one lint process, one chart per unit; returns the units that failed. Each chart is two
 * files (creating files dominates the cost of a batch): Chart.yaml and one template holding the
 * context as a JSON literal (its integers restored to int64 before use) and the user template as a define (or, when the user template has
 * defines of its own, which cannot nest, as a partial beside it).
 */
async function lintUnits(
  runner: HelmRunner,
  units: Unit[],
  dir: string,
  limit: TimeLimit,
): Promise<Map<Unit, Outcome>> {
  const failures = new Map<Unit, Outcome>();
  if (units.length === 0) return failures;
  await Promise.all(
    units.map(async (unit, n) => {
      const chart = path.join(dir, `u${n}`);
      await makePrivateDir(path.join(chart, 'templates'));
      const strict = unit.template.strict;
      // A define cannot hold defines, and a template with unbalanced blocks would swallow the wrapper
      // and get a misleading parse error: those go in a partial file of their own.
      const separate = strict.defines.length > 0 || !strict.balanced;
      const name = separate ? `${CHART}/templates/${partialName(unit.template)}` : LINT_DEFINE;
      // `required` only logs in lint mode: this line tags the log lines that follow with the unit.
      const head = `{{- $_ := required "cs-begin:${n}" nil }}${PRESENT_DEFINITION}{{- $ctx := fromJson ${JSON.stringify(JSON.stringify(unit.context))} }}${restoreInt64s('$ctx', unit.context, unit.positions)}`;
      // .txt: rendered, but not checked as a Kubernetes manifest. The user template starts on line 1.
      const item = separate
        ? `${head}{{ include "${name}" $ctx }}`
        : `${head}{{ define "${LINT_DEFINE}" }}${strict.text}{{ end }}{{ include "${name}" $ctx }}`;
      await Promise.all([
        writePrivateFile(path.join(chart, 'Chart.yaml'), chartYaml),
        writePrivateFile(path.join(chart, 'templates', 'item.txt'), item),
        ...(separate ? [writePrivateFile(path.join(chart, 'templates', partialName(unit.template)), strict.text)] : []),
      ]);
    }),
  );
  const result = await runner.run(['lint', '--quiet', ...units.map((_, n) => `u${n}`)], {
    cwd: dir,
    purpose: `checking ${units.length} values templates`,
    priority: VALUES_PRIORITY,
    ...limit,
  });

  // Lint-mode `required` and `fail` only log; the begin marker tells whose log line it is.
  let current: number | undefined;
  for (const line of result.stderr.split('\n')) {
    const logged = lintLogMessage(line);
    const begin = logged?.kind === 'required' && /^cs-begin:(\d+)$/.exec(logged.message);
    if (begin) {
      current = Number(begin[1]);
      continue;
    }
    const unit = current === undefined ? undefined : units[current];
    if (logged && unit && !failures.has(unit))
      failures.set(unit, { ok: false, reason: 'TemplateError', detail: logged.message });
  }

  for (const section of helm3ExecErrors(result.stdout)
    .split(/^==> Linting /m)
    .slice(1)) {
    const unit = units[Number(/^u(\d+)/.exec(section)?.[1] ?? NaN)];
    const error = /^\[ERROR\] [^:]*: (.*)$/m.exec(section)?.[1];
    if (unit && error !== undefined && !failures.has(unit))
      failures.set(unit, failureFrom(error, unit.template.strict));
  }
  if (result.exitCode !== 0 && failures.size === 0) {
    throw new HelmRenderError(
      'addon values templates',
      'the generated values-template chart',
      cleanHelmStderr(`${result.stderr}\n${result.stdout}`, [[dir, '<values templates>']]),
    );
  }
  return failures;
}

/** Writes the throwaway chart: one item file per unit (its context in values.yaml), the templates as partials; returns the partials. */
async function writeUnitsChart(units: Unit[], dir: string, templatesDir: string): Promise<Set<CompiledTemplate>> {
  await makePrivateDir(templatesDir);
  const values: Record<string, unknown> = {};
  const partials = new Set<CompiledTemplate>(units.map((unit) => unit.template));
  // Contexts of one fleet hold their integers in the same places: one define per distinct set of
  // conversions, so helm parses each once (parsing, not running, dominates the cost of actions).
  const conversions = new Map<string, string>();
  const unitFiles = units.map((unit, n) => {
    values[`u${n}`] = unit.context;
    const actions = restoreInt64s('.', unit.context, unit.positions);
    let name = conversions.get(actions);
    if (actions !== '' && name === undefined) conversions.set(actions, (name = `${INT64_PREFIX}${conversions.size}`));
    const restore = name === undefined ? '' : `{{- include "${name}" .Values.u${n} }}`;
    return writePrivateFile(
      path.join(templatesDir, `u${n}.yaml`),
      `${restore}out: {{ ${includeOf(unit.template, `.Values.u${n}`)} | b64enc | quote }}\n`,
    );
  });
  const defines = [...conversions].map(([actions, name]) => `{{- define "${name}" }}${actions}{{- end }}\n`).join('');
  await Promise.all([
    writePrivateFile(path.join(dir, 'Chart.yaml'), chartYaml),
    writePrivateFile(path.join(templatesDir, '_cs.tpl'), `${PRESENT_DEFINITION}\n${defines}`),
    ...[...partials].map((template) =>
      writePrivateFile(path.join(templatesDir, partialName(template)), template.strict.text),
    ),
    ...unitFiles,
  ]);
  await writePrivateFile(path.join(dir, 'values.yaml'), JSON.stringify(values));
  return partials;
}

/** Steps 3 and 4: one template process over the units (all, or those lint passed); returns every unit's outcome. */
async function renderUnits(
  runner: HelmRunner,
  units: Unit[],
  dir: string,
  kubeVersion: string | undefined,
  limit: TimeLimit,
): Promise<Map<Unit, Outcome>>;
async function renderUnits(
  runner: HelmRunner,
  units: Unit[],
  dir: string,
  kubeVersion: string | undefined,
  limit: TimeLimit,
  options: { stopAtFirstFailure: true },
): Promise<Map<Unit, Outcome> | undefined>;
async function renderUnits(
  runner: HelmRunner,
  units: Unit[],
  dir: string,
  kubeVersion: string | undefined,
  limit: TimeLimit,
  options: { stopAtFirstFailure?: boolean } = {},
): Promise<Map<Unit, Outcome> | undefined> {
  const outcomes = new Map<Unit, Outcome>();
  if (units.length === 0) return outcomes;
  const templatesDir = path.join(dir, 'templates');
  const partials = await writeUnitsChart(units, dir, templatesDir);

  const pending = new Set(units.keys());
  const args = [
    'template',
    'values',
    '.',
    '--namespace',
    'default',
    ...(kubeVersion ? ['--kube-version', helmKubeVersion(kubeVersion)] : []),
  ];
  while (pending.size > 0) {
    const result = await runner.run(args, {
      cwd: dir,
      purpose: `evaluating ${pending.size} values templates`,
      priority: VALUES_PRIORITY,
      ...limit,
    });
    if (result.exitCode === 0) {
      const outputs = new Map<number, string>();
      for (const match of result.stdout.matchAll(
        /^# Source: cs-values\/templates\/u(\d+)\.yaml\nout: "([A-Za-z0-9+/=]*)"$/gm,
      )) {
        outputs.set(Number(match[1]), Buffer.from(match[2] ?? '', 'base64').toString('utf8'));
      }
      for (const n of pending) {
        const output = outputs.get(n);
        // helm template deletes every "<no value>" from what templates print; the base64 hid it.
        outcomes.set(
          units[n]!,
          output === undefined
            ? { ok: false, reason: 'TemplateError', detail: 'helm printed no output for this item' }
            : { ok: true, output: output.replaceAll('<no value>', '') },
        );
      }
      return outcomes;
    }
    if (options.stopAtFirstFailure) return undefined;
    const stderr = helm3ExecErrors(result.stderr);
    const culprits = culpritsOf(stderr, units, pending);
    if (culprits.length === 0) {
      throw new HelmRenderError(
        'addon values templates',
        'the generated values-template chart',
        cleanHelmStderr(stderr, [[dir, '<values templates>']]),
      );
    }
    const message = cleanHelmStderr(stderr);
    for (const n of culprits) {
      outcomes.set(units[n]!, failureFrom(message, units[n]!.template.strict));
      pending.delete(n);
      await rm(path.join(templatesDir, `u${n}.yaml`), { force: true });
    }
    // A partial no pending unit uses any more must not fail the next run (it may be what did not parse).
    for (const template of partials) {
      if (![...pending].some((n) => units[n]!.template === template))
        await rm(path.join(templatesDir, partialName(template)), { force: true });
    }
  }
  return outcomes;
}

/** The pending units helm's error names: the item file it was executing, or every user of a template that does not parse. */
function culpritsOf(stderr: string, units: Unit[], pending: Set<number>): number[] {
  const item = new RegExp(`${CHART}/templates/u(\\d+)\\.yaml`).exec(stderr);
  if (item && pending.has(Number(item[1]))) return [Number(item[1])];
  const partial = new RegExp(`${CHART}/templates/_t(\\d+)\\.tpl`).exec(stderr);
  if (partial) return [...pending].filter((n) => units[n]!.template.index === Number(partial[1]));
  return [];
}

/** Turns helm's message about one item into a failure without helm's throwaway-chart paths. */
function failureFrom(raw: string, strict: StrictTemplate): Outcome {
  const marker = parseMissingMarker(raw);
  if (marker) {
    const what = marker.missing === marker.field ? '' : ` (${marker.missing} does not exist)`;
    const absent = /^\.(ControlPlane|InfraCluster)$/.exec(marker.missing);
    const hint = absent
      ? ` (no ${absent[1]} object was given: the Cluster's spec.${absent[1] === 'ControlPlane' ? 'controlPlaneRef' : 'infrastructureRef'} is unset or its object was not found)`
      : what;
    return {
      ok: false,
      reason: 'MissingField',
      missingField: marker.field,
      line: marker.line,
      detail: `missing field ${marker.field}${hint}; the values are withheld until it exists. To treat it as optional, read it with dig, e.g. {{ dig "spec" "x" "default" .Cluster }}`,
    };
  }
  let text = raw.replace(/^(Error: )+/, '');
  // Our wrapper: `template: cs-values/templates/item.txt:1:9: executing "..." at <include "..." $ctx>: error calling include: `.
  const file = `${CHART}/templates/(?:item\\.txt|u\\d+\\.yaml|_t\\d*\\.tpl)`;
  text = text.replace(
    new RegExp(
      `template: ${file}:\\d+:\\d+: executing "${file}" at <include "[^"]*" (?:\\.Values\\.\\w+|\\$ctx)>: error calling include: `,
      'g',
    ),
    '',
  );
  text = text.replace(
    new RegExp(`template: ${file}:(\\d+):\\d+: executing "(?:${file}|${LINT_DEFINE})" `, 'g'),
    'line $1: ',
  );
  text = text.replace(
    new RegExp(`(?:parse error|execution error) at \\(${file}:(\\d+)(?::\\d+)?\\): `, 'g'),
    'line $1: ',
  );
  text = text.replace(new RegExp(`${file}:(\\d+)(?::\\d+)?`, 'g'), 'line $1');
  for (const [rewritten, original] of strict.restore)
    if (text.includes(rewritten)) text = text.split(rewritten).join(original);
  const lineMatch = /^line (\d+): /.exec(text);
  const line = lineMatch ? Number(lineMatch[1]) : undefined;
  if (lineMatch) text = text.slice(lineMatch[0].length);
  // Only where the rewrite could not reach (a chain on a parenthesised pipeline): helm's own nil pointer.
  const nil = /at <([^>]+)>: nil pointer evaluating/.exec(text);
  if (nil) {
    return {
      ok: false,
      reason: 'MissingField',
      missingField: nil[1],
      line,
      detail: `missing field ${nil[1]} (${text})`,
    };
  }
  return { ok: false, reason: 'TemplateError', line, detail: text };
}

function toResult(item: ValuesTemplateItem, outcome: Outcome): ValuesTemplateResult {
  if (!outcome.ok)
    return failed(
      item,
      new ValuesTemplateError(item.origin, outcome.reason, outcome.detail, outcome.line, outcome.missingField),
    );
  const document = singleMapping(outcome.output, 'the result of the template');
  if ('problem' in document)
    return failed(item, new ValuesTemplateError(item.origin, 'InvalidResult', document.problem));
  const inner = document.mapping['values'];
  if (typeof inner !== 'string') return { id: item.id, ok: true, values: document.mapping };
  const values = singleMapping(inner, 'its `values` string');
  if ('problem' in values) return failed(item, new ValuesTemplateError(item.origin, 'InvalidResult', values.problem));
  return { id: item.id, ok: true, values: values.mapping };
}

function failed(item: ValuesTemplateItem, error: ValuesTemplateError): ValuesTemplateResult {
  return {
    id: item.id,
    ok: false,
    ...(error.missingField ? { missingField: error.missingField } : {}),
    ...(error.reason === 'Timeout' ? { timedOut: true as const } : {}),
    message: error.message,
    error,
  };
}

/** One YAML mapping (an empty document is `{}`), or why not. */
function singleMapping(text: string, what: string): { mapping: Record<string, unknown> } | { problem: string } {
  let documents: unknown[];
  try {
    // Helm reads values files with Kubernetes' YAML (go-yaml v2): `on` is true, `0644` is 420.
    documents = decodeYamlDocuments(text)
      .map((document) => document.value)
      .filter((document) => document !== null && document !== undefined);
  } catch (error) {
    if (!(error instanceof YamlDecodeError)) throw error;
    const reason = error.message;
    return { problem: `${what} is not valid YAML: ${reason}` };
  }
  if (documents.length === 0) return { mapping: {} };
  if (documents.length > 1)
    return { problem: `${what} has ${documents.length} YAML documents; values are one mapping` };
  const [document] = documents;
  if (typeof document !== 'object' || Array.isArray(document)) {
    return {
      problem: `${what} is ${Array.isArray(document) ? 'a list' : `a ${typeof document}`}, not a mapping of values`,
    };
  }
  return { mapping: document as Record<string, unknown> };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
