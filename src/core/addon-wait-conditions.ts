// The CEL conditions of clusteraddon.yaml (`waitForPreCondition` / `waitForPostCondition`),
// evaluated as the cluster-stack-operator evaluates them: every listed object is bound to a
// variable named by its `key` (the whole object, as a map), and the expression must yield `true`.
// A missing object, a false result, or an expression that cannot be evaluated all mean "does not
// hold yet", each with a message that names the condition and what is missing. Pure: the objects
// are read elsewhere (from the workload cluster) and handed in.
//
// The CEL implementation is @marcbachmann/cel-js (maintained, zero dependencies, Node >= 20.19):
// CEL's semantics (macros such as exists/all, has(), heterogeneous number equality, no side
// effects, bounded evaluation) are a language, not something to hand-write. It is loaded on first
// use, synchronously (node >= 20.19 requires ES modules): loading it costs a start-up a plan of
// releases without conditions would pay for nothing.
import { createRequire } from 'node:module';
import type * as CelJs from '@marcbachmann/cel-js';

let celJs: typeof CelJs | undefined;

/** The CEL library, loaded on first use (also evaluates the CRDs' rules, src/api/crd-rules.ts). */
export function celLibrary(): typeof CelJs {
  celJs ??= createRequire(import.meta.url)('@marcbachmann/cel-js') as typeof CelJs;
  return celJs;
}

/** One object a condition reads: `key` is its variable name in the expression. */
export interface WaitConditionObject {
  key: string;
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}

export interface WaitCondition {
  objects: WaitConditionObject[];
  conditions: string;
}

export interface ConditionVerdict {
  holds: boolean;
  /** What holds, or exactly what is awaited. */
  message: string;
}

/** `<kind> <namespace>/<name>` (or `<kind> <name>` for cluster-scoped objects). */
export function describeConditionObject(object: WaitConditionObject): string {
  return `${object.kind} ${object.namespace ? `${object.namespace}/` : ''}${object.name}`;
}

const compiled = new Map<string, ReturnType<typeof CelJs.parse> | Error>();

function compile(expression: string): ReturnType<typeof CelJs.parse> | Error {
  let program = compiled.get(expression);
  if (!program) {
    try {
      program = celLibrary().parse(expression);
    } catch (error) {
      program = error instanceof Error ? error : new Error(String(error));
    }
    // Conditions come from a handful of releases; the cache stays small.
    if (compiled.size > 500) compiled.clear();
    compiled.set(expression, program);
  }
  return program;
}

/** Only the first line of cel-js's message: the rest is a caret diagram for terminals. */
function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!.trim();
}

/** Checks that an expression parses; undefined when it does, else the parse error. */
export function conditionSyntaxError(expression: string): string | undefined {
  const program = compile(expression);
  return program instanceof Error ? firstLine(program) : undefined;
}

/**
 * Evaluates one condition over the objects read for it (`undefined`: the object does not exist).
 * Never throws: every way of not holding is a verdict with a message.
 */
export function evaluateWaitCondition(
  condition: WaitCondition,
  objects: ReadonlyMap<string, Record<string, unknown> | undefined>,
): ConditionVerdict {
  const expression = condition.conditions.trim();
  const missing = condition.objects.filter((object) => objects.get(object.key) === undefined);
  if (missing.length > 0) {
    return {
      holds: false,
      message: `waits for ${missing.map((object) => `${describeConditionObject(object)} (${object.key})`).join(', ')} to exist in the workload cluster`,
    };
  }
  const program = compile(expression);
  if (program instanceof Error)
    return { holds: false, message: `condition \`${expression}\` is not valid CEL: ${firstLine(program)}` };
  const context: Record<string, unknown> = {};
  for (const object of condition.objects) context[object.key] = objects.get(object.key);
  let result: unknown;
  try {
    result = program(context);
  } catch (error) {
    return { holds: false, message: `condition \`${expression}\` cannot be evaluated yet: ${firstLine(error)}` };
  }
  if (typeof result !== 'boolean')
    return {
      holds: false,
      message: `condition \`${expression}\` yields ${typeof result === 'bigint' ? 'an int' : typeof result}, not a bool; fix clusteraddon.yaml`,
    };
  return result
    ? { holds: true, message: `condition \`${expression}\` holds` }
    : { holds: false, message: `condition \`${expression}\` is false` };
}
