// Observe, then decide: read the inputs, list each release source once, resolve (pure), and load the
// releases that are kept. Everything rendering and reporting needs comes out of here.
import { ANNOTATION_RELEASE_SOURCE, type ClusterStack } from '../api/types.js';
import { formatProblem, InputError, type Problem } from '../core/problem.js';
import { type AvailableRelease, type Resolution, resolveReleases, type StackInput } from '../core/resolve-releases.js';
import { classifyInputs, type Inputs } from '../inputs/classify-inputs.js';
import type { ParsedManifests } from '../inputs/parse-manifests.js';
import { loadRelease, type ReleaseContent } from '../release/load-release.js';
import { type ReleaseListing, type ReleaseSource, ReleaseSourceError } from '../release/release-source.js';
import type { SourceOpener } from '../sources/open-release-source.js';

export interface PlanOptions {
  manifests: ParsedManifests;
  /** The source for stacks that name none of their own. */
  defaultSource: string;
  openSource: SourceOpener;
  /** Where archives are extracted (content-addressed). */
  workDir: string;
  onWarning?: (message: string) => void;
}

export interface LoadedRelease {
  tag: string;
  source: ReleaseSource;
  content?: ReleaseContent;
  problems: Problem[];
}

export interface Plan {
  inputs: Inputs;
  resolution: Resolution;
  /** Kept releases, loaded (or with the problems that stopped them loading), by tag. */
  releases: Map<string, LoadedRelease>;
  /** Problems with the inputs (invalid or duplicate objects), each also stopping that object. */
  problems: Problem[];
  warnings: string[];
}

/** The release source location of a stack: spec.releaseSource, then the annotation, then the default. */
export function sourceLocationOf(stack: ClusterStack, defaultSource: string): string {
  return stack.spec.releaseSource ?? stack.metadata.annotations?.[ANNOTATION_RELEASE_SOURCE] ?? defaultSource;
}

export async function buildPlan(options: PlanOptions): Promise<Plan> {
  const warnings: string[] = [];
  const warn = (message: string): void => {
    warnings.push(message);
    options.onWarning?.(message);
  };
  const inputs = classifyInputs(options.manifests.objects);
  const problems = [...options.manifests.problems, ...inputs.problems];

  // One listing per source location, however many stacks share it.
  const listings = new Map<string, Promise<ReleaseListing>>();
  const stackInputs: StackInput[] = [];
  const stackSources = new Map<ClusterStack, ReleaseSource>();
  for (const { object: stack, source: origin } of inputs.clusterStacks) {
    const location = sourceLocationOf(stack, options.defaultSource);
    let source: ReleaseSource;
    try {
      source = options.openSource(location);
    } catch (error) {
      problems.push({ source: origin, object: `ClusterStack ${stack.metadata.namespace ?? 'default'}/${stack.metadata.name}`, message: errorMessage(error) });
      continue;
    }
    stackSources.set(stack, source);
    if (!listings.has(location)) listings.set(location, source.list());
    let listing: ReleaseListing;
    try {
      listing = await listings.get(location)!;
    } catch (error) {
      if (error instanceof ReleaseSourceError && location === options.defaultSource && error.kind === 'not-found') throw new InputError([{ message: error.message }]);
      problems.push({ source: origin, object: `ClusterStack ${stack.metadata.namespace ?? 'default'}/${stack.metadata.name}`, message: errorMessage(error) });
      continue;
    }
    const releases: AvailableRelease[] = listing.releases.map((release) => {
      const available: AvailableRelease = { tag: release.tag, parsed: release.parsed };
      if (release.publishedAt) available.publishedAt = release.publishedAt;
      return available;
    });
    stackInputs.push({ stack, releases });
  }
  for (const [location, listing] of listings) {
    const result = await listing.catch(() => undefined);
    for (const skipped of result?.skipped ?? []) warn(`release source ${location}: skipped "${skipped.name}": ${skipped.reason}`);
  }

  const resolution = resolveReleases({
    stacks: stackInputs,
    clusters: inputs.clusters.map((c) => c.object),
    providerReleases: inputs.providerReleases.map((p) => p.object),
  });

  const releases = new Map<string, LoadedRelease>();
  for (const stack of resolution.clusterStacks) {
    const source = stackSources.get(stack.stack);
    if (!source) continue;
    for (const decision of stack.releases.filter((release) => release.kept)) {
      if (releases.has(decision.name)) continue;
      const loaded: LoadedRelease = { tag: decision.name, source, problems: [] };
      try {
        loaded.content = await loadRelease(await source.fetch(decision.name), options.workDir);
        // Reported (plan and render print them, the controller logs them), never withholding the release.
        for (const warning of loaded.content.warnings) warn(formatProblem(warning));
      } catch (error) {
        loaded.problems.push(...problemsOf(error, decision.name));
      }
      releases.set(decision.name, loaded);
    }
  }
  return { inputs, resolution, releases, problems, warnings };
}

function problemsOf(error: unknown, release: string): Problem[] {
  if (error instanceof InputError) return error.problems.map((problem) => ({ ...problem, source: problem.source ?? release }));
  return [{ source: release, message: errorMessage(error) }];
}

export function errorMessage(error: unknown): string {
  if (error instanceof InputError) return error.problems.map(formatProblem).join('; ');
  return error instanceof Error ? error.message : String(error);
}
