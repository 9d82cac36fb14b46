// What rendering needs from the outside, as types the core owns: a chart renderer and a values
// template evaluator. renderers/ implements them with helm; the core never knows how.

export interface ChartRenderRequest {
  /** Helm release name: the first four tag parts on the cluster-class side, `cluster-addon` for addons. */
  releaseName: string;
  chart: { dir: string; digest: string; origin: string };
  namespace: string;
  /** e.g. `1.30.4` or `v1.30.4`; always passed to the renderer (`.Capabilities.KubeVersion`). */
  kubeVersion: string;
  /** What the target serves beyond `kubeVersion` (`.Capabilities.APIVersions`), sorted; none: helm's own list only. */
  apiVersions?: string[];
  /** Layered in order, later wins (like repeated `-f`). */
  values?: Record<string, unknown>[];
  includeCrds?: boolean;
}

export interface ValuesTemplateItem {
  id: string;
  /** Where the template comes from, for messages: `docker-ferrol-1-30-v1/cluster-addon-values.yaml`. */
  origin: string;
  template: string;
  context: { Cluster: object; ControlPlane?: object; InfraCluster?: object };
}

export type ValuesTemplateResult =
  | { id: string; ok: true; values: Record<string, unknown> }
  /** `timedOut`: the template ran past the time limit; a larger limit may pass, so the failure is not remembered for these inputs. */
  | { id: string; ok: false; missingField?: string; timedOut?: true; message: string; error: Error };

/** Rendering's two needs: render a chart, evaluate values templates (many at once). */
export interface RenderDependencies {
  /** Resolves to the multi-document YAML the chart renders; rejects with a `fix-input` failure when the chart fails. */
  renderChart(request: ChartRenderRequest): Promise<string>;
  /** One result per item, in order; an item that fails fails alone. */
  evaluateValues(items: ValuesTemplateItem[], kubeVersion: string): Promise<ValuesTemplateResult[]>;
  /**
   * How many values-template chunks to evaluate at once: the processes the renderer runs side by
   * side (helm's slots). Default 1, one chunk after another.
   */
  valuesInFlight?: number;
  /** The program that renders charts, as recorded with each unit it renders (e.g. `helm v4.3.1`); undefined before it was found. */
  rendererName?(): string | undefined;
}
