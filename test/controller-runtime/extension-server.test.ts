import { copyFileSync, rmSync } from 'node:fs';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startExtensionServer,
  type ExtensionHandler,
  type ExtensionServer,
} from '../../src/controller/runtime/extension-server.js';
import { callExtension, HOOKS_V1ALPHA1, hookPath } from '../support/fake-capi-caller.js';
import { makeSelfSignedCert, type SelfSignedCert } from '../support/self-signed-cert.js';

function peerFingerprint(url: string, ca: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), ca, servername: 'localhost' }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.end();
    });
    socket.on('error', reject);
  });
}

describe('runtime extension server', () => {
  let cert: SelfSignedCert;
  let server: ExtensionServer;
  const seen: Record<string, unknown>[] = [];
  const handlers: ExtensionHandler[] = [
    {
      hook: 'BeforeClusterUpgrade',
      name: 'before-cluster-upgrade',
      timeoutSeconds: 10,
      failurePolicy: 'Fail',
      handle: async (request) => {
        seen.push(request);
        return { status: 'Success', message: 'waiting for stage cni', retryAfterSeconds: 7 };
      },
    },
    {
      hook: 'AfterClusterUpgrade',
      name: 'after-cluster-upgrade',
      timeoutSeconds: 5,
      failurePolicy: 'Ignore',
      handle: async () => {
        throw new Error('boom');
      },
    },
  ];

  beforeAll(async () => {
    cert = makeSelfSignedCert();
    server = await startExtensionServer({
      port: 0,
      host: '127.0.0.1',
      certFile: cert.certFile,
      keyFile: cert.keyFile,
      handlers,
      reloadIntervalMs: 50,
    });
  });
  afterAll(async () => {
    await server?.close();
    rmSync(cert.dir, { recursive: true, force: true });
  });

  it('answers discovery with every handler, its hook, timeout and failure policy', async () => {
    const { status, body } = await callExtension(
      server.url,
      `/${HOOKS_V1ALPHA1}/discovery`,
      { apiVersion: HOOKS_V1ALPHA1, kind: 'DiscoveryRequest' },
      cert.ca,
    );
    expect(status).toBe(200);
    expect(body).toEqual({
      apiVersion: HOOKS_V1ALPHA1,
      kind: 'DiscoveryResponse',
      status: 'Success',
      message: '',
      handlers: [
        {
          name: 'before-cluster-upgrade',
          requestHook: { apiVersion: HOOKS_V1ALPHA1, hook: 'BeforeClusterUpgrade' },
          timeoutSeconds: 10,
          failurePolicy: 'Fail',
        },
        {
          name: 'after-cluster-upgrade',
          requestHook: { apiVersion: HOOKS_V1ALPHA1, hook: 'AfterClusterUpgrade' },
          timeoutSeconds: 5,
          failurePolicy: 'Ignore',
        },
      ],
    });
  });

  it('routes a hook request by hook and handler name, with or without the ExtensionConfig suffix, and types the response', async () => {
    const request = {
      apiVersion: HOOKS_V1ALPHA1,
      kind: 'BeforeClusterUpgradeRequest',
      cluster: { metadata: { name: 'alpha' } },
      fromKubernetesVersion: 'v1.30.2',
      toKubernetesVersion: 'v1.30.4',
    };
    for (const path of [
      hookPath('BeforeClusterUpgrade', 'before-cluster-upgrade'),
      `${hookPath('BeforeClusterUpgrade', 'before-cluster-upgrade')}.clusterstack-gitops`,
    ]) {
      const { status, body } = await callExtension(server.url, path, request, cert.ca);
      expect(status).toBe(200);
      expect(body).toEqual({
        apiVersion: HOOKS_V1ALPHA1,
        kind: 'BeforeClusterUpgradeResponse',
        status: 'Success',
        message: 'waiting for stage cni',
        retryAfterSeconds: 7,
      });
    }
    expect(seen.at(-1)).toMatchObject({ toKubernetesVersion: 'v1.30.4' });
  });

  it('turns a handler that throws into a Failure response Cluster API retries', async () => {
    const { status, body } = await callExtension(
      server.url,
      hookPath('AfterClusterUpgrade', 'after-cluster-upgrade'),
      { apiVersion: HOOKS_V1ALPHA1, kind: 'AfterClusterUpgradeRequest', cluster: {}, kubernetesVersion: 'v1.30.4' },
      cert.ca,
    );
    expect(status).toBe(200);
    expect(body).toEqual({
      apiVersion: HOOKS_V1ALPHA1,
      kind: 'AfterClusterUpgradeResponse',
      status: 'Failure',
      message: 'the extension failed to handle the hook: boom',
    });
  });

  it('refuses a request of the wrong kind, bad JSON, another method and unknown paths, with a message', async () => {
    const path = hookPath('BeforeClusterUpgrade', 'before-cluster-upgrade');
    const count = seen.length;
    const wrongKind = await callExtension(
      server.url,
      path,
      { apiVersion: HOOKS_V1ALPHA1, kind: 'AfterClusterUpgradeRequest' },
      cert.ca,
    );
    expect(wrongKind).toMatchObject({
      status: 400,
      body: {
        kind: 'BeforeClusterUpgradeResponse',
        status: 'Failure',
        message: expect.stringContaining('expected a BeforeClusterUpgradeRequest'),
      },
    });
    const notJson = await callExtension(server.url, path, '{nope', cert.ca);
    expect(notJson).toMatchObject({
      status: 400,
      body: { status: 'Failure', message: expect.stringContaining('not JSON') },
    });
    const get = await callExtension(server.url, path, undefined, cert.ca, 'GET');
    expect(get.status).toBe(405);
    const unknown = await callExtension(
      server.url,
      hookPath('BeforeClusterDelete', 'before-cluster-delete'),
      { apiVersion: HOOKS_V1ALPHA1, kind: 'BeforeClusterDeleteRequest' },
      cert.ca,
    );
    expect(unknown).toMatchObject({
      status: 404,
      body: { status: 'Failure', message: expect.stringContaining('discovery') },
    });
    expect(seen.length).toBe(count);
  });

  it('serves a rotated certificate to new connections once the files change', async () => {
    const before = await peerFingerprint(server.url, cert.ca);
    const rotated = makeSelfSignedCert(undefined, 'rotated');
    copyFileSync(rotated.keyFile, cert.keyFile);
    copyFileSync(rotated.certFile, cert.certFile);
    let after = before;
    // Ends as soon as the new certificate is served; the limit only stops a stuck test (5 s was
    // tight for noticing the files and reloading on a loaded machine).
    const deadline = Date.now() + 60_000;
    while (after === before && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 60));
      after = await peerFingerprint(server.url, rotated.ca).catch(() => before);
    }
    expect(after).not.toBe(before);
    rmSync(rotated.dir, { recursive: true, force: true });
  });

  it('fails to start with a clear error when the key file is missing', async () => {
    await expect(
      startExtensionServer({
        port: 0,
        host: '127.0.0.1',
        certFile: cert.certFile,
        keyFile: `${cert.dir}/missing.key`,
        handlers,
      }),
    ).rejects.toThrow(/missing\.key/);
  });
});
