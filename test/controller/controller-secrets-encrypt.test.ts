// The controller with --secrets encrypt: the same pipeline as `render`, so a stack whose addons
// generate certificates is published with its Secrets as SOPS documents (decrypted here by the real
// sops, which checks the MAC), Flux decrypts them, and the start-up flags are checked.
// On a real API server, as the shipped ServiceAccount.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControllerRuntime } from '../../src/controller/run-controller.js';
import { decodeYamlDocument } from '../../src/yaml/kube-yaml.js';
import { runClusterstack, tempDir } from '../support/cli.js';
import { aStack } from '../support/controller-fixture.js';
import {
  aCluster,
  startRealControllerFixture,
  type RealControllerFixture,
} from '../support/real-controller-fixture.js';
import { ageKeygen, decryptWithSops, sopsMetadataOf } from '../support/sops-oracle.js';
import { pino } from 'pino';

const NS = 'sops';
const SECRET = `clusters/${NS}/echo/cluster-addon/secret-cilium-ca.yaml`;
const URL = 'https://git.example.test/fleet.git';

// The two describes share nothing: the start-up checks (no API server, no controller) run while
// the first waits for its lease and its publish.
describe('controller --secrets encrypt', { concurrent: true }, () => {
  let fx: RealControllerFixture;
  let runtime: ControllerRuntime | undefined;
  let alice: Awaited<ReturnType<typeof ageKeygen>>;

  beforeAll(async () => {
    alice = await ageKeygen(await tempDir('csk-age-'));
    fx = await startRealControllerFixture();
    await fx.createNamespace(NS);
    await fx.create(aStack('hubble', NS, { name: 'hubble', versions: ['v1'] }));
    await fx.create(aCluster('echo', NS, 'docker-hubble-1-30-v1'));
  });
  afterAll(async () => {
    await runtime?.stop();
    await fx?.cleanup();
  });

  it('publishes the generated Secrets encrypted for the recipients, with Flux decryption on that stage, and logs no value', async () => {
    // Every line the controller logs, at debug level.
    const entries: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void entries.push(line) });
    runtime = await fx.start('encrypt', {
      logger,
      defaultSource: path.resolve('examples/sops-secrets/releases'),
      secrets: 'encrypt',
      encryption: { recipients: [alice.recipient], recipientsOrigin: '--age-recipient' },
      engine: 'flux',
      wiring: {
        engine: 'flux',
        name: 'clusterstacks',
        namespace: 'flux-system',
        source: { kind: 'git', url: URL, branch: 'main', path: '' },
        sopsSecret: 'fleet-age',
      },
    });
    await fx.waitFor(
      () => fx.git.head(fx.remote, 'main') !== '' && fx.published()[SECRET] !== undefined,
      'the controller to publish the encrypted Secret',
    );
    const files = fx.git.files(fx.remote, 'main');
    const document = files[SECRET]!;
    expect(sopsMetadataOf(document).age.map((entry) => entry.recipient)).toEqual([alice.recipient]);
    const secret = await decryptWithSops(document, alice.identity);
    expect(secret).toMatchObject({ kind: 'Secret', metadata: { name: 'cilium-ca', namespace: 'kube-system' } });
    expect(Buffer.from((secret['data'] as Record<string, string>)['ca.key']!, 'base64').toString('utf8')).toContain(
      'PRIVATE KEY-----',
    );
    const stage = decodeYamlDocument(files[`flux/clusters/${NS}/echo/cluster-addon.yaml`]!).value as any;
    expect(stage.spec.decryption).toEqual({ provider: 'sops', secretRef: { name: 'fleet-age' } });
    const logged = entries.join('');
    expect(entries.length).toBeGreaterThan(0);
    for (const value of Object.values(secret['data'] as Record<string, string>))
      expect(logged).not.toContain(value.slice(0, 40));
  });
});

describe('controller --secrets encrypt (start-up checks)', { concurrent: true }, () => {
  const base = [
    'controller',
    '--release-source',
    'examples/sops-secrets/releases',
    '--output',
    '/nonexistent/csk-out',
    '--kubeconfig',
    '/nonexistent/kubeconfig',
  ];

  it('refuses an invalid recipient, Argo CD wiring, or recipients without encrypt, before it starts', async () => {
    const bad = await runClusterstack([...base, '--secrets', 'encrypt', '--age-recipient', 'age1nope']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('is not an age X25519 recipient');
    const argo = await runClusterstack([...base, '--secrets', 'encrypt', '--gitops', 'argocd'], {
      env: { CLUSTERSTACK_AGE_RECIPIENTS: (await ageKeygen(await tempDir('csk-age-'))).recipient },
    });
    expect(argo.code).toBe(2);
    expect(argo.stderr).toContain('--secrets encrypt cannot be combined with --gitops argocd');
    const stray = await runClusterstack([...base, '--age-recipient', 'age1nope']);
    expect(stray.code).toBe(2);
    expect(stray.stderr).toContain('--age-recipient only apply with --secrets encrypt');
  });
});
