// The default README's template compiled ahead (src/output/output-readme-precompiled.ts) must be what
// Handlebars compiles from the template today, and render the very README compiling it would: a
// stale specification would write an old README. CSK_WRITE_PRECOMPILED=1 writes it anew.
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OUTPUT_README_PRECOMPILED } from '../src/output/output-readme-precompiled.js';
import { OUTPUT_README_TEMPLATE } from '../src/output/output-readme-template.js';
import { compileTemplate, precompiledTemplate, precompileTemplate } from '../src/render/sandboxed-template.js';

const MODULE = 'src/output/output-readme-precompiled.ts';

describe('the default README template, compiled ahead', () => {
  it('is what Handlebars compiles from output-readme-template.ts now', () => {
    const spec = precompileTemplate(OUTPUT_README_TEMPLATE);
    if (process.env.CSK_WRITE_PRECOMPILED === '1') {
      writeFileSync(
        MODULE,
        `// Generated from output-readme-template.ts by precompileTemplate (src/render/sandboxed-template.ts): do\n` +
          `// not edit. test/readme-precompiled.test.ts checks it is current; CSK_WRITE_PRECOMPILED=1 npx vitest run\n` +
          `// test/readme-precompiled.test.ts writes it again (then npx prettier --write ${MODULE}).\n` +
          `export const OUTPUT_README_PRECOMPILED = ${JSON.stringify(spec)};\n`,
      );
      return;
    }
    expect(
      OUTPUT_README_PRECOMPILED,
      `stale: run CSK_WRITE_PRECOMPILED=1 npx vitest run test/readme-precompiled.test.ts`,
    ).toBe(spec);
  });

  it('renders what compiling the template renders, for a summary with every section', () => {
    // Every section of the template, each list with an entry (and the same with nothing in it).
    const summary = {
      inputDigest: 'sha256:abc',
      stacks: [
        {
          namespace: 'cluster-stacks',
          name: 'docker-ferrol',
          latestRelease: 'docker-ferrol-1-30-v2',
          usableVersions: 'v1, v2',
          releases: [{ name: 'docker-ferrol-1-30-v2', version: 'v2', status: 'kept', reasons: ['a', 'b'] }],
        },
      ],
      clusters: [
        {
          namespace: 'cluster-stacks',
          name: 'c1',
          release: 'docker-ferrol-1-30-v2',
          addonVersion: 'v2',
          stages: ['cni', 'metrics-server'],
          status: 'rendered',
        },
      ],
      sharedObjects: [
        { object: 'ConfigMap x', path: 'management/cluster-stacks/shared/x.yaml', renderedBy: ['r1', 'r2'] },
      ],
      layers: [
        {
          namespace: 'ns',
          cluster: 'c1',
          layer: 'l',
          version: 'v1',
          status: 'held',
          after: ['base'],
          waitingOn: ['base'],
        },
        { namespace: 'ns', cluster: 'c1', layer: 'm', version: 'v1', status: 'withheld', after: [], reason: 'broken' },
      ],
      providers: [
        {
          kind: 'CoreProvider',
          namespace: 'capi',
          name: 'cluster-api',
          version: 'v1.8.0',
          contract: 'v1beta1',
          source: 'oci',
          dir: 'management/providers/core',
        },
      ],
      clusterRequests: {
        profiles: [{ name: 'small', stack: 'docker-ferrol', versions: 'v1' }],
        requests: [{ namespace: 'team-a', name: 'game', purpose: 'dev', phase: 'Ready', cluster: 'c1', message: 'ok' }],
      },
      encryptedSecrets: [
        { namespace: 'ns', name: 's', file: 'clusters/ns/c1/cni/secret-s.yaml', decryptedWith: 'age' },
      ],
      helmHooks: [
        {
          object: 'Job j',
          events: 'post-install',
          weight: 0,
          deletePolicy: 'before-hook-creation',
          decision: 'kept',
          where: 'x',
          reason: 'y',
          units: ['u'],
        },
      ],
      withheld: [
        { kind: 'cluster', namespace: 'cluster-stacks', name: 'c2', layer: 'l', reason: 'not ready <yet> & "quoted"' },
      ],
      notes: ['a note with {{braces}}'],
    };
    const compiled = compileTemplate(OUTPUT_README_TEMPLATE, 'default README template');
    const ahead = precompiledTemplate(OUTPUT_README_PRECOMPILED, 'default README template');
    expect(ahead(summary)).toBe(compiled(summary));
    expect(ahead({})).toBe(compiled({}));
    const empty = Object.fromEntries(
      Object.entries(summary).map(([key, value]) => [key, Array.isArray(value) ? [] : value]),
    );
    expect(ahead(empty)).toBe(compiled(empty));
    for (const shown of [
      'not ready <yet> & "quoted"',
      'waits for base',
      '`management/providers/core/`',
      'age',
      'team-a/game',
    ])
      expect(ahead(summary)).toContain(shown);
  });
});
