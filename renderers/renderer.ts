// The rendering capability: turn a chart (and values) into manifests. One adapter per backend
// (helm today), so the core never knows how a chart becomes YAML.

export interface ChartRenderRequest {
  /** Helm release name: the first four tag parts on the cluster-class side, `cluster-addon` for addons. */
  releaseName: string;
  chart: { dir: string; digest: string; origin: string };
  namespace: string;
  /** e.g. `1.30.4` or `v1.30.4`; always passed to the renderer (`.Capabilities.KubeVersion`). */
  kubeVersion: string;
  /** Layered in order, later wins (like repeated `-f`). */
  values?: Record<string, unknown>[];
  includeCrds?: boolean;
}

export interface Renderer {
  /** Renders the chart; resolves to the multi-document YAML the renderer printed. */
  renderChart(request: ChartRenderRequest): Promise<string>;
}
