// The layer rules of ARCHITECTURE.md, checked on the import graph of the source tree: no import
// cycle anywhere; the core imports no renderer, publisher, pipeline, controller or CLI; the output
// model imports nothing but itself; renderers import no publisher; publishers no controller or CLI.
// Inside the controller: the runtime knows nothing about reconciling, and the desired state is
// computed without the runtime's clients or the reconcilers. Folders: no two import each other,
// and the core's folders are ranked, each importing only lower ones.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOTS = ['src', 'renderers', 'gitops'];

function sourceFiles(): string[] {
  return ROOTS.flatMap((root) =>
    readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
      .map((entry) => path.join(entry.parentPath, entry.name)),
  );
}

/** file -> the project files it imports (static and dynamic, type-only included). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles()) {
    const text = readFileSync(file, 'utf8');
    const specs = [
      ...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'/g),
      ...text.matchAll(/import\(\s*'(\.[^']+)'\s*\)/g),
    ].map((match) => match[1]!);
    graph.set(
      file,
      specs.map((spec) => path.normalize(path.join(path.dirname(file), spec)).replace(/\.js$/, '.ts')),
    );
  }
  return graph;
}

type Layer = 'output' | 'core' | 'renderers' | 'gitops' | 'pipeline' | 'controller' | 'cli' | 'entry';

function layerOf(file: string): Layer {
  if (file === path.normalize('src/index.ts')) return 'entry';
  if (file.startsWith('src/output/')) return 'output';
  if (file.startsWith('src/pipeline/')) return 'pipeline';
  if (file.startsWith('src/controller/')) return 'controller';
  if (file.startsWith('src/cli/')) return 'cli';
  if (file.startsWith('renderers/')) return 'renderers';
  if (file.startsWith('gitops/')) return 'gitops';
  return 'core';
}

/** What each layer may import besides itself. */
const ALLOWED: Record<Layer, Layer[]> = {
  output: [],
  core: ['output'],
  renderers: ['core', 'output'],
  gitops: ['core', 'output'],
  pipeline: ['core', 'output', 'renderers', 'gitops'],
  controller: ['core', 'output', 'renderers', 'gitops', 'pipeline'],
  cli: ['core', 'output', 'renderers', 'gitops', 'pipeline', 'controller'],
  // The package entry (src/index.ts) re-exports the library API from every layer but the drivers.
  entry: ['core', 'output', 'renderers', 'gitops', 'pipeline'],
};

/** The controller's parts, by folder; `controller.ts` (the orchestration) may import them all. */
type ControllerPart = 'runtime' | 'desired-state' | 'reconcile';

function controllerPartOf(file: string): ControllerPart | undefined {
  const match = /^src\/controller\/(runtime|desired-state|reconcile)\//.exec(file.split(path.sep).join('/'));
  return match?.[1] as ControllerPart | undefined;
}

/** What each controller part may import from the others (the runtime contract is the runtime's). */
const CONTROLLER_ALLOWED: Record<ControllerPart, (target: string) => boolean> = {
  runtime: () => false,
  // Desired state is a pure function of observed objects: only the runtime's contract types.
  'desired-state': (target) => target === path.normalize('src/controller/runtime/runtime-contract.ts'),
  reconcile: () => true,
};

/** The folder a file belongs to; the package entry and the top-level settings files stand apart. */
function folderOf(file: string): string {
  const posix = file.split(path.sep).join('/');
  if (posix === 'src/index.ts') return 'entry';
  const dir = path.posix.dirname(posix);
  return dir === 'src' ? 'src/*.ts' : dir;
}

/**
 * The core's folders, lowest first (ARCHITECTURE.md): each imports only itself and folders before
 * it. `src/*.ts` is the settings (config.ts, runtime-extension-settings.ts).
 */
const CORE_RANK = [
  'src/output',
  'src/core',
  'src/*.ts',
  'src/yaml',
  'src/cache',
  'src/http',
  'src/api',
  'src/secrets',
  'src/inputs',
  'src/release',
  'src/oci',
  'src/github',
  'src/sources',
  'src/layers',
  'src/providers',
  'src/plan',
  'src/render',
  'src/cluster-requests',
  'src/run-plan',
  'src/shards',
];

/** Strongly connected components with more than one file (Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, counter);
    low.set(file, counter);
    counter += 1;
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

/** The folder of a core file (`src/<folder>/...`), or undefined outside the core's folders. */
function coreFolderOf(file: string): string | undefined {
  return /^src\/([^/]+)\//.exec(file.split(path.sep).join('/'))?.[1];
}

/**
 * Core folders that must not import each other in either direction: the pipeline's order is
 * inputs, plan (what to do), render (doing it); providers are planned beside the stacks and
 * rendered by render, never the other way round.
 */
const ONE_WAY_FOLDERS: [string, string][] = [
  ['plan', 'render'],
  ['render', 'providers'],
];

describe('architecture', () => {
  const graph = importGraph();

  it('reads the whole source tree', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get(path.normalize('src/pipeline/render-and-publish.ts'))).toContain(
      path.normalize('src/render/render-output.ts'),
    );
  });

  it('has no import cycle', () => {
    expect(cycles(graph)).toEqual([]);
  });

  it('keeps the plan, render and providers folders from importing each other', () => {
    const arrows = new Set<string>();
    for (const [file, imports] of graph) {
      const from = coreFolderOf(file);
      for (const target of imports) {
        const to = coreFolderOf(target);
        if (from && to && from !== to) arrows.add(`${from} -> ${to}`);
      }
    }
    const both = ONE_WAY_FOLDERS.filter(([a, b]) => arrows.has(`${a} -> ${b}`) && arrows.has(`${b} -> ${a}`)).map(
      ([a, b]) => `${a} <-> ${b}`,
    );
    expect(both).toEqual([]);
  });

  it('keeps every layer to what it may import', () => {
    const violations: string[] = [];
    for (const [file, imports] of graph) {
      const from = layerOf(file);
      for (const target of imports) {
        const to = layerOf(target);
        if (to !== from && !ALLOWED[from].includes(to)) violations.push(`${file} (${from}) imports ${target} (${to})`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('keeps the controller runtime apart from reconciling, and desired state pure', () => {
    const violations: string[] = [];
    for (const [file, imports] of graph) {
      const from = controllerPartOf(file);
      if (!from) continue;
      for (const target of imports) {
        const to = controllerPartOf(target);
        if (target === path.normalize('src/controller/controller.ts'))
          violations.push(`${file} (${from}) imports the controller`);
        else if (to && to !== from && !CONTROLLER_ALLOWED[from](target))
          violations.push(`${file} (${from}) imports ${target} (${to})`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('sorts text one way: compareText, never localeCompare (locale- and ICU-dependent)', () => {
    const users = sourceFiles().filter((file) => /\.localeCompare\(/.test(readFileSync(file, 'utf8')));
    expect(users).toEqual([]);
  });

  it('bounds work in flight one way: RankedSlots, no second limiter', () => {
    const users = sourceFiles().filter((file) => /from 'p-limit'|from 'p-queue'/.test(readFileSync(file, 'utf8')));
    expect(users).toEqual([]);
  });

  it('names the GitOps engines only where one is chosen: no engine API group or annotation key in the core', () => {
    // The core follows EngineRules (src/core/engine-rules.ts); gitops/wiring spells them out, and
    // the pipeline, CLI and controller choose the engine (the controller also reads its objects).
    const choosers = ['src/cli/', 'src/pipeline/', 'src/controller/'].map((dir) => path.normalize(dir));
    const engineNames = /argoproj\.io|fluxcd\.io|kustomize\.toolkit|toolkit\.fluxcd/;
    const users = sourceFiles().filter(
      (file) =>
        file.startsWith(`src${path.sep}`) &&
        !choosers.some((dir) => file.startsWith(dir)) &&
        engineNames.test(readFileSync(file, 'utf8')),
    );
    expect(users).toEqual([]);
  });

  it('starts child processes in one place: src/core/run-process.ts, and the spawner process it may go through', () => {
    const users = sourceFiles().filter((file) =>
      /from 'node:child_process'|from 'child_process'|from 'simple-git'|from 'execa'/.test(readFileSync(file, 'utf8')),
    );
    expect(users.sort()).toEqual([
      path.normalize('src/core/process-spawner.ts'),
      path.normalize('src/core/run-process.ts'),
    ]);
  });

  it('types every error class in the Failure hierarchy, and classifies by class, not by duck-typed properties', () => {
    const plainErrors: string[] = [];
    const duckTyped: string[] = [];
    for (const file of sourceFiles()) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(/class (\w+) extends (?:Error|TypeError|RangeError)\b/g))
        plainErrors.push(`${file}: ${match[1]}`);
      if (/\{ (?:retryable|failureKind)\?: unknown \}/.test(text)) duckTyped.push(file);
    }
    expect(plainErrors).toEqual([`${path.normalize('src/core/failure.ts')}: Failure`]);
    expect(duckTyped).toEqual([]);
  });

  it('has no two folders that import each other', () => {
    const edges = new Map<string, string>();
    for (const [file, imports] of graph) {
      for (const target of imports) {
        const pair = `${folderOf(file)} -> ${folderOf(target)}`;
        const edge = `${file} -> ${target}`.split(path.sep).join('/');
        if (folderOf(file) !== folderOf(target) && !edges.has(pair)) edges.set(pair, edge);
      }
    }
    const mutual = [...edges].filter(
      ([pair]) =>
        pair.split(' -> ')[0]! < pair.split(' -> ')[1]! && edges.has(pair.split(' -> ').reverse().join(' -> ')),
    );
    expect(
      mutual.map(([pair, edge]) => `${pair} (${edge}; back: ${edges.get(pair.split(' -> ').reverse().join(' -> '))})`),
    ).toEqual([]);
  });

  it('keeps each core folder to the folders ranked below it', () => {
    const climbs: string[] = [];
    for (const [file, imports] of graph) {
      const from = CORE_RANK.indexOf(folderOf(file));
      if (from < 0) continue;
      for (const target of imports) {
        const to = CORE_RANK.indexOf(folderOf(target));
        const edge = `${file} -> ${target}`.split(path.sep).join('/');
        if (to > from || (to < 0 && graph.has(target)))
          climbs.push(`${edge} (${folderOf(target)} is not below ${folderOf(file)})`);
      }
    }
    expect(climbs).toEqual([]);
  });

  it('ranks every core folder', () => {
    const folders = new Set(
      [...graph.keys()].filter((file) => layerOf(file) === 'core' || layerOf(file) === 'output').map(folderOf),
    );
    expect([...folders].filter((folder) => !CORE_RANK.includes(folder)).sort()).toEqual([]);
  });
});
