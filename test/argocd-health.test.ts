// The Argo CD health checks, run for real in Lua (Debian package lua5.4; Argo CD embeds a Lua 5.1,
// so the scripts keep to 5.1 syntax, checked below). Each case sets `obj` from JSON, runs the
// script as Argo CD does and reads hs.status and hs.message back.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ARGOCD_HEALTH_PATCH_FILE,
  ARGOCD_HEALTH_SCRIPTS,
  argoHealthKey,
  defaultHealthDir,
  readArgoHealthScripts,
  renderArgoHealthPatch,
  type ArgoHealthScript,
} from '../gitops/health/argocd-health-patch.js';
import {
  clusterStackHealthScript,
  degradedReasonSuffixes,
  HEALTH_SCRIPT_KINDS,
} from '../gitops/health/clusterstack-health-script.js';
import { generateHealthFiles } from '../gitops/health/generate-health.js';
import { FAILURE_REACTIONS, failureKindOfReason, type FailureKind } from '../src/core/failure.js';
import { CORE_SCHEMAS } from './support/engine-schemas/kubernetes-schemas.js';
import { kustomizeBuild } from './support/engine-schemas/kustomize-build.js';
import { checkObject } from './support/engine-schemas/schema-facts.js';
import { parseObject } from './support/engine-schemas/wiring-checks.js';

const HEALTH_DIR = path.resolve(import.meta.dirname, '../gitops/health');
const LUA = process.env.LUA ?? 'lua5.4';

/** A Lua string literal for any JS string: quotes, backslashes and control characters escaped (UTF-8 passes through). */
function luaString(text: string): string {
  const escaped = text
    .replace(/[\\"]/g, (c) => `\\${c}`)
    .replace(/[\x00-\x1f\x7f]/g, (c) => `\\${c.charCodeAt(0).toString().padStart(3, '0')}`);
  return `"${escaped}"`;
}

/** A Lua table constructor for a JSON value, as Argo CD hands objects to its scripts (null fields are absent). */
function luaLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'nil';
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`not a JSON number: ${value}`);
    return String(value);
  }
  if (typeof value === 'string') return luaString(value);
  if (Array.isArray(value)) {
    if (value.some((item) => item === null || item === undefined))
      throw new Error('null inside an array would leave a hole in a Lua sequence');
    return `{${value.map(luaLiteral).join(', ')}}`;
  }
  const fields = Object.entries(value as Record<string, unknown>)
    .filter(([, item]) => item !== null && item !== undefined)
    .map(([key, item]) => `[${luaString(key)}] = ${luaLiteral(item)}`);
  return `{${fields.join(', ')}}`;
}

/** Runs a health script against `object` and returns what Argo CD would read. */
function health(script: ArgoHealthScript, object: unknown): { status: string; message: string } {
  const program = [
    `obj = ${luaLiteral(object)}`,
    `local hs = dofile(${luaString(path.join(HEALTH_DIR, `${script}.lua`))})`,
    'io.write(tostring(hs.status), "\\n", tostring(hs.message), "\\n")',
  ].join('\n');
  const run = spawnSync(LUA, ['-'], { input: program, encoding: 'utf8' });
  if (run.error)
    throw new Error(`${LUA} could not be run (${run.error.message}): install the Debian package lua5.4, or set LUA`);
  if (run.status !== 0) throw new Error(`${script}.lua failed: ${run.stderr}`);
  const [status, message] = run.stdout.split('\n');
  return { status: status!, message: message! };
}

const OUR_KINDS = ['ClusterStack', 'ClusterStackRelease', 'ClusterAddon'] as const;
const scriptOf = (kind: (typeof OUR_KINDS)[number]): ArgoHealthScript => `clusterstack.x-k8s.io_${kind}`;

function ours(kind: string, generation: number, status?: Record<string, unknown>): Record<string, unknown> {
  return {
    apiVersion: 'clusterstack.x-k8s.io/v1alpha1',
    kind,
    metadata: { name: 'x', namespace: 'cluster-stacks', generation },
    spec: {},
    ...(status ? { status } : {}),
  };
}

function ready(
  status: 'True' | 'False' | 'Unknown',
  reason: string,
  message: string,
  observedGeneration?: number,
): Record<string, unknown> {
  return {
    type: 'Ready',
    status,
    reason,
    message,
    lastTransitionTime: '2025-01-01T00:00:00Z',
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
  };
}

describe('luaLiteral', () => {
  it('round-trips strings with quotes, backslashes, newlines, control characters and UTF-8', () => {
    const text = 'say "hi"\\ then\nnext\ttab\x01\x7f1 – ünïcode ✓';
    const run = spawnSync(LUA, ['-'], { input: `io.write((${luaLiteral({ a: [text] })}).a[1])`, encoding: 'utf8' });
    expect(run.stdout).toBe(text);
  });
});

describe.each(OUR_KINDS)('Argo CD health of a %s', (kind) => {
  const script = scriptOf(kind);
  const extra = kind === 'ClusterStack' ? {} : { ready: true };

  it('is Healthy when Ready is True for the current generation', () => {
    expect(
      health(
        script,
        ours(kind, 3, {
          observedGeneration: 3,
          ...extra,
          conditions: [ready('True', 'Ready', 'All releases published', 3)],
        }),
      ),
    ).toEqual({
      status: 'Healthy',
      message: 'Ready: All releases published',
    });
  });

  it('is Progressing while it waits, with the reason and message', () => {
    expect(
      health(
        script,
        ours(kind, 3, {
          observedGeneration: 3,
          conditions: [ready('False', 'WaitingForProviderRelease', 'DockerClusterStackRelease not ready yet')],
        }),
      ),
    ).toEqual({
      status: 'Progressing',
      message: 'WaitingForProviderRelease: DockerClusterStackRelease not ready yet',
    });
    expect(
      health(script, ours(kind, 3, { observedGeneration: 3, conditions: [ready('Unknown', 'Reconciling', '')] })),
    ).toEqual({ status: 'Progressing', message: 'Reconciling' });
    expect(
      health(
        script,
        ours(kind, 3, {
          observedGeneration: 3,
          conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: '2025-01-01T00:00:00Z' }],
        }),
      ),
    ).toEqual({ status: 'Progressing', message: 'Not ready yet' });
  });

  it.each(['SpecInvalid', 'ReleaseDownloadFailed', 'ProviderTemplateNotFound', 'SecretRefused'])(
    'is Degraded when Ready is False with the user-fix reason %s',
    (reason) => {
      expect(
        health(
          script,
          ours(kind, 3, { observedGeneration: 3, ready: false, conditions: [ready('False', reason, 'do something')] }),
        ),
      ).toEqual({ status: 'Degraded', message: `${reason}: do something` });
    },
  );

  it.each(['PublishRetrying', 'ReleaseSourceUnavailable'])(
    'is Progressing when Ready is False with the retry reason %s: the controller retries by itself',
    (reason) => {
      expect(
        health(
          script,
          ours(kind, 3, { observedGeneration: 3, ...extra, conditions: [ready('False', reason, 'retrying in 4s')] }),
        ),
      ).toEqual({ status: 'Progressing', message: `${reason}: retrying in 4s` });
    },
  );

  it('is Degraded when Ready is False with an InternalError reason', () => {
    expect(
      health(
        script,
        ours(kind, 3, {
          observedGeneration: 3,
          ...extra,
          conditions: [ready('False', 'RenderInternalError', 'a bug')],
        }),
      ),
    ).toEqual({ status: 'Degraded', message: 'RenderInternalError: a bug' });
  });

  it('shows every reason suffix of the failure table with the health the table gives its kind', () => {
    for (const [failureKind, reaction] of Object.entries(FAILURE_REACTIONS) as [
      FailureKind,
      (typeof FAILURE_REACTIONS)[FailureKind],
    ][]) {
      for (const suffix of reaction.reasonSuffixes) {
        const reason = `Some${suffix}`;
        expect(failureKindOfReason(reason), reason).toBe(failureKind);
        expect(
          health(script, ours(kind, 1, { observedGeneration: 1, conditions: [ready('False', reason, 'x')] })).status,
          reason,
        ).toBe(reaction.argoHealth);
      }
    }
  });

  it('is Progressing before the controller wrote any status', () => {
    expect(health(script, ours(kind, 1))).toEqual({
      status: 'Progressing',
      message: 'Waiting for the controller to report status',
    });
  });

  it('is Progressing while the status describes an older generation, even a failed one', () => {
    expect(
      health(
        script,
        ours(kind, 4, { observedGeneration: 3, ...extra, conditions: [ready('False', 'SpecInvalid', 'bad', 3)] }),
      ),
    ).toEqual({
      status: 'Progressing',
      message: 'Waiting for the controller to observe generation 4',
    });
    expect(
      health(script, ours(kind, 4, { observedGeneration: 4, ...extra, conditions: [ready('True', 'Ready', 'ok', 3)] })),
    ).toEqual({
      status: 'Progressing',
      message: 'Waiting for the Ready condition to reflect generation 4',
    });
  });

  it('ignores conditions other than Ready', () => {
    const conditions = [
      {
        type: 'ReleaseAssetsDownloaded',
        status: 'False',
        reason: 'DownloadFailed',
        message: 'x',
        lastTransitionTime: '2025-01-01T00:00:00Z',
      },
      ready('True', 'Ready', ''),
    ];
    expect(health(script, ours(kind, 1, { observedGeneration: 1, ...extra, conditions }))).toEqual({
      status: 'Healthy',
      message: 'Ready',
    });
  });
});

describe('Argo CD health of a ClusterStack', () => {
  it('is Progressing without a Ready condition', () => {
    expect(
      health('clusterstack.x-k8s.io_ClusterStack', ours('ClusterStack', 1, { observedGeneration: 1, conditions: [] })),
    ).toEqual({ status: 'Progressing', message: 'Waiting for the Ready condition' });
  });
});

describe.each(['ClusterStackRelease', 'ClusterAddon'] as const)('Argo CD health of a %s and status.ready', (kind) => {
  const script = scriptOf(kind);

  it('is Healthy on status.ready alone when there is no Ready condition', () => {
    expect(health(script, ours(kind, 2, { observedGeneration: 2, ready: true }))).toEqual({
      status: 'Healthy',
      message: 'Ready',
    });
  });

  it('is Progressing when status.ready is false, whatever Ready says', () => {
    expect(health(script, ours(kind, 2, { observedGeneration: 2, ready: false })).status).toBe('Progressing');
    expect(
      health(script, ours(kind, 2, { observedGeneration: 2, ready: false, conditions: [ready('True', 'Ready', '')] }))
        .status,
    ).toBe('Progressing');
  });
});

describe('Argo CD health of an Application (for the per-cluster app of apps)', () => {
  const application = (health?: Record<string, unknown>): Record<string, unknown> => ({
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: 'dev-alpha-cni' },
    ...(health ? { status: { health } } : {}),
  });

  it("passes the child Application's own health through", () => {
    expect(health('argoproj.io_Application', application({ status: 'Healthy' }))).toEqual({
      status: 'Healthy',
      message: '',
    });
    expect(
      health('argoproj.io_Application', application({ status: 'Degraded', message: 'DaemonSet cilium not ready' })),
    ).toEqual({ status: 'Degraded', message: 'DaemonSet cilium not ready' });
  });

  it('is Progressing until the child reports a health', () => {
    expect(health('argoproj.io_Application', application()).status).toBe('Progressing');
    expect(health('argoproj.io_Application', application({ status: '' })).status).toBe('Progressing');
  });
});

describe('the health scripts', () => {
  it('keep to Lua 5.1 syntax, which Argo CD embeds', () => {
    for (const [script, text] of readArgoHealthScripts(HEALTH_DIR)) {
      const code = text.replace(/--.*$/gm, '').replace(/"(?:[^"\\]|\\.)*"/g, '""');
      expect(code, script).not.toMatch(/\/\/|<<|>>|\bgoto\b|::|&|\||~(?!=)|\butf8\./);
    }
  });
});

describe('generate:health', () => {
  it('changes nothing when run again: the committed scripts and patch are its output, byte for byte', () => {
    const files = generateHealthFiles(HEALTH_DIR);
    expect([...files.keys()].sort()).toEqual(
      [
        ARGOCD_HEALTH_PATCH_FILE,
        ...OUR_KINDS.map((kind) => `${scriptOf(kind)}.lua`),
        'openstack.k-orc.cloud_Image.lua',
      ].sort(),
    );
    for (const [name, text] of files)
      expect(readFileSync(path.join(HEALTH_DIR, name), 'utf8'), `${name} is stale: run npm run generate:health`).toBe(
        text,
      );
  });

  it('takes the Degraded reason suffixes from the failure table', () => {
    expect(degradedReasonSuffixes()).toEqual({
      kinds: ['fix-input', 'internal'],
      suffixes: [...FAILURE_REACTIONS['fix-input'].reasonSuffixes, ...FAILURE_REACTIONS.internal.reasonSuffixes],
      progressingKinds: ['retry', 'wait'],
    });
    const changed = { ...FAILURE_REACTIONS, wait: { ...FAILURE_REACTIONS.wait, argoHealth: 'Degraded' as const } };
    for (const spec of HEALTH_SCRIPT_KINDS)
      expect(clusterStackHealthScript(spec, changed)).toContain(
        '{ "Failed", "Invalid", "NotFound", "Refused", "Waiting", "Pending", "NotReady", "InternalError" }',
      );
  });

  it('refuses a failure table where a Progressing suffix ends with a Degraded one', () => {
    const overlapping = {
      ...FAILURE_REACTIONS,
      retry: { ...FAILURE_REACTIONS.retry, reasonSuffixes: ['RetryFailed'] },
    };
    expect(() => degradedReasonSuffixes(overlapping)).toThrow(
      /"Failed" \(fix-input, Degraded\) and "RetryFailed" \(retry, Progressing\) overlap/,
    );
  });
});

describe('renderArgoHealthPatch', () => {
  it('equals the committed argocd-cm patch, so the patch and the scripts never drift', () => {
    expect(readFileSync(path.join(HEALTH_DIR, ARGOCD_HEALTH_PATCH_FILE), 'utf8')).toBe(renderArgoHealthPatch());
  });

  it('patches argocd-cm with every script under its resource.customizations.health key', () => {
    const patch = parseObject(renderArgoHealthPatch());
    expect(checkObject(patch, CORE_SCHEMAS)).toEqual([]);
    expect(patch.metadata.name).toBe('argocd-cm');
    expect(Object.keys(patch.data).sort()).toEqual(
      [
        'resource.customizations.health.argoproj.io_Application',
        'resource.customizations.health.clusterstack.x-k8s.io_ClusterAddon',
        'resource.customizations.health.clusterstack.x-k8s.io_ClusterStack',
        'resource.customizations.health.clusterstack.x-k8s.io_ClusterStackRelease',
        'resource.customizations.health.openstack.k-orc.cloud_Image',
      ].sort(),
    );
    for (const script of ARGOCD_HEALTH_SCRIPTS)
      expect(patch.data[argoHealthKey(script)]).toBe(readFileSync(path.join(HEALTH_DIR, `${script}.lua`), 'utf8'));
  });

  it('merges into an installed argocd-cm in any namespace, keeping its other settings (kubectl kustomize)', () => {
    const install =
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: argocd-cm\n  namespace: argocd\ndata:\n  url: https://argocd.example.com\n';
    const kustomization = `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [install.yaml]\npatches:\n  - path: ${ARGOCD_HEALTH_PATCH_FILE}\n    target: {kind: ConfigMap, name: argocd-cm}\n`;
    const [configMap] = kustomizeBuild(
      new Map([
        ['install.yaml', install],
        ['kustomization.yaml', kustomization],
        [ARGOCD_HEALTH_PATCH_FILE, renderArgoHealthPatch()],
      ]),
      '.',
    );
    expect(configMap!.metadata.namespace).toBe('argocd');
    expect(configMap!.data.url).toBe('https://argocd.example.com');
    for (const script of ARGOCD_HEALTH_SCRIPTS)
      expect(configMap!.data[argoHealthKey(script)]).toBe(readFileSync(path.join(HEALTH_DIR, `${script}.lua`), 'utf8'));
  });

  it('finds the scripts beside its module', () => {
    expect(defaultHealthDir()).toBe(HEALTH_DIR);
  });
});

describe('Argo CD health of an ORC Image (the node image shared objects wait for)', () => {
  const script: ArgoHealthScript = 'openstack.k-orc.cloud_Image';
  const image = (generation: number, conditions?: Record<string, unknown>[]): Record<string, unknown> => ({
    apiVersion: 'openstack.k-orc.cloud/v1alpha1',
    kind: 'Image',
    metadata: { name: 'ubuntu-capi-image-v1.32.5', namespace: 'fleet', generation },
    spec: {},
    ...(conditions ? { status: { conditions } } : {}),
  });
  const condition = (
    type: string,
    status: string,
    reason: string,
    message: string,
    observedGeneration = 2,
  ): Record<string, unknown> => ({
    type,
    status,
    reason,
    message,
    observedGeneration,
    lastTransitionTime: '2025-01-01T00:00:00Z',
  });

  it('is Progressing before ORC reported anything', () => {
    expect(health(script, image(2))).toEqual({
      status: 'Progressing',
      message: "Waiting for ORC to report the image's status",
    });
  });

  it('is Progressing while the image uploads, with its reason and message', () => {
    expect(
      health(
        script,
        image(2, [
          condition('Available', 'False', 'Progressing', 'Uploading image data'),
          condition('Progressing', 'True', 'Progressing', 'Uploading image data'),
        ]),
      ),
    ).toEqual({
      status: 'Progressing',
      message: 'Progressing: Uploading image data',
    });
  });

  it('is Healthy once Available is True for the current generation', () => {
    expect(
      health(
        script,
        image(2, [
          condition('Available', 'True', 'Success', 'OpenStack resource is available'),
          condition('Progressing', 'False', 'Success', 'OpenStack resource is up to date'),
        ]),
      ),
    ).toEqual({
      status: 'Healthy',
      message: 'Success: OpenStack resource is available',
    });
  });

  it('is Degraded when ORC stopped progressing without the image becoming available (a terminal error)', () => {
    expect(
      health(
        script,
        image(2, [
          condition('Available', 'False', 'InvalidConfiguration', 'hash mismatch'),
          condition('Progressing', 'False', 'InvalidConfiguration', 'hash mismatch'),
        ]),
      ),
    ).toEqual({
      status: 'Degraded',
      message: 'InvalidConfiguration: hash mismatch',
    });
  });

  it('is Progressing while its conditions describe an older generation, even Available ones', () => {
    expect(
      health(
        script,
        image(3, [
          condition('Available', 'True', 'Success', 'ok', 2),
          condition('Progressing', 'False', 'Success', 'ok', 2),
        ]),
      ),
    ).toEqual({
      status: 'Progressing',
      message: 'Waiting for ORC to observe generation 3',
    });
  });

  it('is generated from its source (npm run generate:health)', () => {
    expect(readFileSync(path.join(HEALTH_DIR, `${script}.lua`), 'utf8')).toBe(
      generateHealthFiles(HEALTH_DIR).get(`${script}.lua`),
    );
  });
});
