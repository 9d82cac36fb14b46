// Renders a plan the way the pipeline does, for tests that call the render step alone: the target's
// tree read into its published state once, the units decided (unit-decisions.ts), then rendered.
import type { RenderedTree } from '../../src/output/rendered-tree.js';
import { readPublishedState } from '../../src/output/published-state.js';
import type { Plan } from '../../src/plan/build-plan.js';
import type { RenderDependencies } from '../../src/render/render-dependencies.js';
import { type RenderOptions, type RenderOutcome, renderOutput } from '../../src/render/render-output.js';
import { decideUnits, type UnitPlanSettings } from '../../src/render/unit-decisions.js';
import { engineRulesFor } from '../../gitops/wiring/engine-rules.js';

/** renderOutput over `plan` decided against `previous` with `settings` (secrets, hook placement, annotations). */
export function renderPlan(
  plan: Plan,
  deps: RenderDependencies,
  options: Omit<UnitPlanSettings, 'engine'> &
    Partial<Pick<UnitPlanSettings, 'engine'>> &
    Omit<RenderOptions, 'previous'> & { previous: RenderedTree },
): Promise<RenderOutcome> {
  const { secrets, encryption, managementAnnotations, engine = engineRulesFor('none'), previous, ...rest } = options;
  const published = readPublishedState(previous);
  const units = decideUnits(plan, published, {
    secrets,
    ...(encryption ? { encryption } : {}),
    ...(managementAnnotations ? { managementAnnotations } : {}),
    engine,
  });
  return renderOutput(units, deps, { ...rest, previous: published });
}
