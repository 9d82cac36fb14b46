// The Renderer backed by `helm template`: no dependency updates, nothing networked, the Kubernetes
// version always given, values layered through files written with sorted keys.
import path from 'node:path';
import { encodeYaml } from '../src/yaml/kube-yaml.js';
import { cleanHelmStderr, HelmRenderError } from './helm-errors.js';
import type { HelmRunner } from './helm-runner.js';
import type { ChartRenderRequest, RenderDependencies } from '../src/render/render-dependencies.js';
import { writePrivateFile } from '../src/cache/private-cache-file.js';

export class HelmRenderer implements Pick<RenderDependencies, 'renderChart'> {
  /** How long each chart's last render took (ms), by chart digest. */
  readonly #lastRenderMs = new Map<string, number>();

  constructor(private readonly runner: HelmRunner) {}

  /**
   * Renders waiting for a slot start longest first: a render's last minutes then hold the short
   * charts, which end together, instead of one long chart running on while the other cores idle.
   * A chart not rendered yet goes before every known one, so its time is known early.
   */
  #priorityOf(chart: ChartRenderRequest['chart']): number {
    return -(this.#lastRenderMs.get(chart.digest) ?? Number.MAX_VALUE);
  }

  /**
   * Runs `helm template` for the request; rejects with HelmRenderError carrying helm's message. The
   * first values layer reaches helm on its standard input (`-f -`), so the usual render (one layer)
   * writes no file; further layers (a ClusterStack's own values) go through files in a temp dir.
   */
  async renderChart(request: ChartRenderRequest): Promise<string> {
    const kubeVersion = helmKubeVersion(request.kubeVersion);
    const [first, ...more] = request.values ?? [];
    // Written as helm reads it back (go-yaml v2, integers beyond 2^53 in full); sorted keys make
    // the text, and anything derived from it, deterministic.
    const stdin = first === undefined ? undefined : encodeYaml(first, { sortKeys: true });
    if (more.length === 0) return this.#template(request, kubeVersion, stdin, []);
    return this.runner.withTempDir('render', async (dir) => {
      const files: string[] = [];
      for (const [index, values] of more.entries()) {
        const file = path.join(dir, `values-${index + 2}.yaml`);
        await writePrivateFile(file, encodeYaml(values, { sortKeys: true }));
        files.push(file);
      }
      return this.#template(request, kubeVersion, stdin, files);
    });
  }

  async #template(
    request: ChartRenderRequest,
    kubeVersion: string,
    stdin: string | undefined,
    moreFiles: string[],
  ): Promise<string> {
    const args = [
      'template',
      request.releaseName,
      request.chart.dir,
      '--namespace',
      request.namespace,
      '--kube-version',
      kubeVersion,
    ];
    if (request.includeCrds) args.push('--include-crds');
    // Added to helm's own list (helm cannot be told to drop from it): see src/core/kube-api-versions.ts.
    // One flag each: helm 3.10 reads the flag as an array (a comma is part of the value), later ones split on commas.
    for (const apiVersion of request.apiVersions ?? []) args.push('--api-versions', apiVersion);
    if (stdin !== undefined) args.push('-f', '-');
    for (const file of moreFiles) args.push('-f', file);
    const result = await this.runner.run(args, {
      purpose: `rendering ${request.releaseName} from ${request.chart.origin}`,
      priority: this.#priorityOf(request.chart),
      ...(stdin !== undefined ? { stdin } : {}),
    });
    this.#lastRenderMs.set(request.chart.digest, result.elapsedMs);
    if (result.exitCode !== 0) {
      // helm names its standard input "-": say which values those were, as for the files.
      const replacements: [string, string][] = [
        ['failed to parse -:', 'failed to parse values #1:'],
        ...moreFiles.map((file, index): [string, string] => [file, `values #${index + 2}`]),
        [request.chart.dir, request.chart.origin],
      ];
      throw new HelmRenderError(
        request.releaseName,
        request.chart.origin,
        cleanHelmStderr(result.stderr, replacements),
      );
    }
    if (result.stdoutEncodingError) {
      // Kubernetes (go-yaml) refuses the document outright; written as is, it would hold U+FFFD instead.
      const { line, message } = result.stdoutEncodingError;
      const template = result.stdout
        .split('\n')
        .slice(0, line)
        .reverse()
        .find((text) => text.startsWith('# Source: '))
        ?.slice('# Source: '.length);
      throw new HelmRenderError(
        request.releaseName,
        request.chart.origin,
        `${template ? `template ${template}` : 'the output'} is not valid UTF-8: ${message} of helm's output; Kubernetes refuses such a document (use .Files.Get only for text files, b64enc for binary ones)`,
      );
    }
    return result.stdout;
  }
}

/** `1.30.4` or `v1.30.4` → `v1.30.4`; anything else is a caller bug, reported before helm runs. */
export function helmKubeVersion(version: string): string {
  const trimmed = version.trim();
  if (!/^v?\d+\.\d+(\.\d+)?([-+][0-9A-Za-z.+-]*)?$/.test(trimmed)) {
    throw new TypeError(`kubeVersion "${version}" is not a Kubernetes version such as 1.30.4`);
  }
  return trimmed.startsWith('v') ? trimmed : `v${trimmed}`;
}
