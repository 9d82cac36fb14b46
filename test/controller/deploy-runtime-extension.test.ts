// deploy/runtime-extension: the Component that makes the controller a Cluster API runtime
// extension builds with real kustomize onto the Flux install, and its pieces point at each other.
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveRuntimeExtensionSettings } from '../../src/runtime-extension-settings.js';
import { kustomizeBuild } from '../support/engine-schemas/kustomize-build.js';
import { makeSelfSignedCert } from '../support/self-signed-cert.js';
import { EXAMPLE_RELEASES, runClusterstack, tempDir } from '../support/cli.js';

function filesUnder(dir: string, into: Map<string, string>): Map<string, string> {
  for (const entry of readdirSync(dir)) {
    const file = path.join(dir, entry);
    if (statSync(file).isDirectory()) filesUnder(file, into);
    else into.set(`repo/${file}`, readFileSync(file, 'utf8'));
  }
  return into;
}

describe('deploy/runtime-extension', () => {
  const files = filesUnder('crds', filesUnder('deploy', new Map()));
  files.set(
    'install/kustomization.yaml',
    'resources: [../repo/deploy/flux]\ncomponents: [../repo/deploy/runtime-extension]\n',
  );
  const objects = kustomizeBuild(files, 'install');
  const find = (kind: string, name: string) =>
    objects.find((object) => object['kind'] === kind && object['metadata']['name'] === name);

  it('registers an ExtensionConfig whose Service reaches the controller pods on the extension port', () => {
    const config = find('ExtensionConfig', 'clusterstack-gitops')!;
    expect(config['apiVersion']).toBe('runtime.cluster.x-k8s.io/v1alpha1');
    const service = find('Service', config['spec']['clientConfig']['service']['name'])!;
    expect(service['metadata']['namespace']).toBe(config['spec']['clientConfig']['service']['namespace']);
    // The leader's EndpointSlice names the port by the Service port's name, at the container port.
    expect(service['spec']['ports']).toEqual([
      { name: 'https', port: config['spec']['clientConfig']['service']['port'], targetPort: 9443 },
    ]);
    const deployment = find('Deployment', 'clusterstack-gitops-controller')!;
    const container = deployment['spec']['template']['spec']['containers'][0];
    expect(container['ports']).toContainEqual({ name: 'extension', containerPort: 9443 });
  });

  it('routes the Service to the leader alone: no selector, the leader writes its EndpointSlice knowing its pod IP', () => {
    const service = find('Service', 'clusterstack-gitops-runtime-extension')!;
    expect(service['spec']['selector']).toBeUndefined();
    const data = find('ConfigMap', 'clusterstack-gitops-config')!['data'];
    expect(data['CLUSTERSTACK_RUNTIME_EXTENSION_SERVICE']).toBe(service['metadata']['name']);
    const env = find('Deployment', 'clusterstack-gitops-controller')!['spec']['template']['spec']['containers'][0][
      'env'
    ];
    expect(env).toContainEqual({ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
    expect(env.map((variable: { name: string }) => variable.name)).toEqual(
      expect.arrayContaining(['POD_NAME', 'POD_NAMESPACE']),
    );
    const role = find('Role', 'clusterstack-gitops-runtime-extension-endpoint')!;
    expect(role['metadata']['namespace']).toBe(service['metadata']['namespace']);
    expect(role['rules']).toEqual([
      { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['create'] },
      {
        apiGroups: ['discovery.k8s.io'],
        resources: ['endpointslices'],
        resourceNames: [`${service['metadata']['name']}-leader`],
        verbs: ['get', 'patch'],
      },
    ]);
    const binding = find('RoleBinding', 'clusterstack-gitops-runtime-extension-endpoint')!;
    expect(binding['subjects']).toEqual([
      { kind: 'ServiceAccount', name: 'clusterstack-gitops-controller', namespace: 'clusterstack-system' },
    ]);
  });

  it("mounts the cert-manager Certificate's Secret where the controller reads it, and has Cluster API inject its CA", () => {
    const certificate = find('Certificate', 'clusterstack-gitops-runtime-extension')!;
    const secret = certificate['spec']['secretName'];
    expect(certificate['spec']['dnsNames']).toContain('clusterstack-gitops-runtime-extension.clusterstack-system.svc');
    expect(find('Issuer', certificate['spec']['issuerRef']['name'])).toBeDefined();
    expect(find('ExtensionConfig', 'clusterstack-gitops')!['metadata']['annotations']).toEqual({
      'runtime.cluster.x-k8s.io/inject-ca-from-secret': `clusterstack-system/${secret}`,
    });
    const pod = find('Deployment', 'clusterstack-gitops-controller')!['spec']['template']['spec'];
    const volume = pod['volumes'].find(
      (candidate: { secret?: { secretName: string } }) => candidate.secret?.secretName === secret,
    );
    const mount = pod['containers'][0]['volumeMounts'].find(
      (candidate: { name: string }) => candidate.name === volume.name,
    );
    const data = find('ConfigMap', 'clusterstack-gitops-config')!['data'];
    expect(mount).toMatchObject({ mountPath: data['CLUSTERSTACK_RUNTIME_EXTENSION_CERT_DIR'], readOnly: true });
    expect(data).toMatchObject({
      CLUSTERSTACK_GITOPS: 'flux',
      CLUSTERSTACK_RUNTIME_EXTENSION_ADDR: ':9443',
      CLUSTERSTACK_HOOK_FAILURE_POLICY: 'Fail',
    });
  });

  it('lets the controller read kubeconfig Secrets one by one, and nothing more', () => {
    const role = find('ClusterRole', 'clusterstack-gitops-runtime-extension-kubeconfigs')!;
    expect(role['rules']).toEqual([{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }]);
  });
});

describe('resolveRuntimeExtensionSettings', () => {
  it('is off without an address', () => {
    expect(resolveRuntimeExtensionSettings({}, {}, process.cwd())).toBeUndefined();
    expect(
      resolveRuntimeExtensionSettings({ CLUSTERSTACK_RUNTIME_EXTENSION_ADDR: '0' }, {}, process.cwd()),
    ).toBeUndefined();
  });

  it('names the missing certificate file and how to provide it', () => {
    expect(() =>
      resolveRuntimeExtensionSettings(
        { CLUSTERSTACK_RUNTIME_EXTENSION_ADDR: ':9443' },
        { certDir: '/nonexistent-dir' },
        process.cwd(),
      ),
    ).toThrow(
      "the runtime extension needs /nonexistent-dir/tls.crt: mount the serving certificate's Secret (tls.crt, tls.key) there, or point --runtime-extension-cert-dir (CLUSTERSTACK_RUNTIME_EXTENSION_CERT_DIR) at it",
    );
  });

  it('reads flags over the environment, and refuses a bad address, failure policy, timeout action or durations, naming the flag', () => {
    const cert = makeSelfSignedCert();
    try {
      const env = { CLUSTERSTACK_RUNTIME_EXTENSION_ADDR: ':9443', CLUSTERSTACK_RUNTIME_EXTENSION_CERT_DIR: cert.dir };
      expect(resolveRuntimeExtensionSettings(env, {}, process.cwd())).toEqual({
        port: 9443,
        certFile: cert.certFile,
        keyFile: cert.keyFile,
        timeoutMs: 1_800_000,
        onTimeout: 'proceed',
        retryAfterSeconds: 10,
        failurePolicy: 'Fail',
      });
      expect(
        resolveRuntimeExtensionSettings(
          env,
          { addr: '127.0.0.1:8443', timeout: '5m', retryAfter: '3s', failurePolicy: 'Ignore' },
          process.cwd(),
        ),
      ).toMatchObject({
        host: '127.0.0.1',
        port: 8443,
        timeoutMs: 300_000,
        retryAfterSeconds: 3,
        failurePolicy: 'Ignore',
      });
      expect(() => resolveRuntimeExtensionSettings(env, { addr: 'nine' }, process.cwd())).toThrow(
        '--runtime-extension-addr (CLUSTERSTACK_RUNTIME_EXTENSION_ADDR) must be [host]:port such as :9443, not "nine"',
      );
      expect(
        resolveRuntimeExtensionSettings({ ...env, CLUSTERSTACK_HOOK_ON_TIMEOUT: 'hold' }, {}, process.cwd()),
      ).toMatchObject({ onTimeout: 'hold' });
      expect(() => resolveRuntimeExtensionSettings(env, { onTimeout: 'fail' }, process.cwd())).toThrow(
        '--hook-on-timeout (CLUSTERSTACK_HOOK_ON_TIMEOUT) must be proceed (let the upgrade go) or hold (keep holding it), not "fail"',
      );
      expect(() => resolveRuntimeExtensionSettings(env, { failurePolicy: 'fail' }, process.cwd())).toThrow(
        '--hook-failure-policy (CLUSTERSTACK_HOOK_FAILURE_POLICY) must be Fail or Ignore, not "fail"',
      );
      expect(() => resolveRuntimeExtensionSettings(env, { retryAfter: '500ms' }, process.cwd())).toThrow(/at least 1s/);
      expect(() => resolveRuntimeExtensionSettings(env, { timeout: 'soon' }, process.cwd())).toThrow(/--hook-timeout/);
      // Routing the Service to the leader needs the pod's IP and namespace from the downward API.
      const routed = {
        ...env,
        CLUSTERSTACK_RUNTIME_EXTENSION_SERVICE: 'hooks',
        POD_IP: '10.1.2.3',
        POD_NAMESPACE: 'clusterstack-system',
        POD_NAME: 'controller-0',
      };
      expect(resolveRuntimeExtensionSettings(routed, {}, process.cwd())).toMatchObject({
        leaderService: {
          service: 'hooks',
          namespace: 'clusterstack-system',
          podIP: '10.1.2.3',
          podName: 'controller-0',
        },
      });
      expect(() => resolveRuntimeExtensionSettings({ ...routed, POD_IP: '' }, {}, process.cwd())).toThrow(
        '--runtime-extension-service (CLUSTERSTACK_RUNTIME_EXTENSION_SERVICE) routes Service hooks to the leader by its pod IP: set POD_IP and POD_NAMESPACE',
      );
    } finally {
      rmSync(cert.dir, { recursive: true, force: true });
    }
  });
});

describe('clusterstack controller --runtime-extension-addr', () => {
  it('lists the runtime extension flags in its usage', async () => {
    const { stdout } = await runClusterstack(['controller', '--help']);
    for (const flag of [
      '--runtime-extension-addr',
      '--runtime-extension-cert-dir',
      '--hook-timeout',
      '--hook-on-timeout',
      '--hook-retry-after',
      '--hook-failure-policy',
      '--runtime-extension-service',
    ])
      expect(stdout).toContain(flag);
  });

  it('refuses to start without the serving certificate, saying where it looked, before touching anything', async () => {
    const out = await tempDir('csk-ext-out-');
    const result = await runClusterstack(
      [
        'controller',
        '--release-source',
        EXAMPLE_RELEASES,
        '--output',
        out,
        '--runtime-extension-addr',
        ':9443',
        '--runtime-extension-cert-dir',
        `${out}/tls`,
      ],
      { env: {} },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`the runtime extension needs ${out}/tls/tls.crt`);
    expect(readdirSync(out)).toEqual([]);
  });
});
