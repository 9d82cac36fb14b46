import { describe, expect, it } from 'vitest';
import { nameProblem, nameRuleFor, namespaceProblem } from '../src/api/object-name-rules.js';

const problemFor = (apiVersion: string, kind: string, name: string): string | undefined =>
  nameProblem(name, nameRuleFor(apiVersion, kind));

describe('nameRuleFor', () => {
  it('holds most kinds, and custom resources, to an RFC 1123 subdomain of 253 characters', () => {
    for (const [apiVersion, kind] of [
      ['v1', 'ConfigMap'],
      ['v1', 'Secret'],
      ['apps/v1', 'Deployment'],
      ['clusterstack.x-k8s.io/v1alpha1', 'ClusterStack'],
      ['monitoring.coreos.com/v1', 'ServiceMonitor'],
    ] as const) {
      expect(problemFor(apiVersion, kind, 'kube-proxy.config')).toBeUndefined();
      expect(problemFor(apiVersion, kind, 'a'.repeat(253))).toBeUndefined();
      expect(problemFor(apiVersion, kind, 'a'.repeat(254))).toMatch(
        /is 254 characters long, over the 253 Kubernetes allows/,
      );
      expect(problemFor(apiVersion, kind, 'Bad_Name')).toMatch(
        /must be an RFC 1123 subdomain .*; Kubernetes refuses it/,
      );
    }
  });

  it('holds Namespaces, Services and StatefulSets to an RFC 1123 label of 63 characters', () => {
    for (const [apiVersion, kind] of [
      ['v1', 'Namespace'],
      ['v1', 'Service'],
      ['apps/v1', 'StatefulSet'],
    ] as const) {
      expect(problemFor(apiVersion, kind, 'kube-system')).toBeUndefined();
      // A Service may start with a digit where the RelaxedServiceNameValidation gate is on: never refused here.
      expect(problemFor(apiVersion, kind, '1st')).toBeUndefined();
      expect(problemFor(apiVersion, kind, 'with.dot')).toMatch(/must be an RFC 1123 label/);
      expect(problemFor(apiVersion, kind, 'a'.repeat(64))).toMatch(/over the 63/);
    }
  });

  it('lets RBAC names be any path segment, as Kubernetes does (system:controller:foo)', () => {
    for (const kind of ['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding']) {
      expect(problemFor('rbac.authorization.k8s.io/v1', kind, 'system:controller:token-cleaner')).toBeUndefined();
      expect(problemFor('rbac.authorization.k8s.io/v1', kind, `Mixed_Case ${'x'.repeat(300)}`)).toBeUndefined();
      expect(problemFor('rbac.authorization.k8s.io/v1', kind, 'a/b')).toMatch(
        /must be a path segment \(not "\." or "\.\.", without "\/" or "%"\)/,
      );
      expect(problemFor('rbac.authorization.k8s.io/v1', kind, '..')).toMatch(/must be a path segment/);
    }
  });

  it("holds a Cluster to Cluster API's label-value length and a CronJob to 52 characters", () => {
    expect(problemFor('cluster.x-k8s.io/v1beta1', 'Cluster', 'prod.eu-1')).toBeUndefined();
    expect(problemFor('cluster.x-k8s.io/v1beta2', 'Cluster', 'a'.repeat(64))).toBe(
      'is 64 characters long, over the 63 Cluster API allows (the name is the value of the cluster.x-k8s.io/cluster-name label)',
    );
    expect(problemFor('cluster.x-k8s.io/v1beta1', 'Cluster', 'Alpha_One')).toMatch(
      /must be an RFC 1123 subdomain .*; Cluster API refuses it/,
    );
    expect(problemFor('cluster.x-k8s.io/v1beta1', 'Cluster', '../../escape')).toMatch(/must be an RFC 1123 subdomain/);
    expect(problemFor('batch/v1', 'CronJob', 'a'.repeat(52))).toBeUndefined();
    expect(problemFor('batch/v1', 'CronJob', 'a'.repeat(53))).toMatch(
      /over the 52 Kubernetes allows \(a CronJob names its Jobs/,
    );
  });

  it("leaves kinds of Kubernetes' groups it has no rule for to the path-segment rule, so none is refused wrongly", () => {
    expect(problemFor('certificates.k8s.io/v1', 'CertificateSigningRequest', 'node-csr-Ab_C')).toBeUndefined();
    expect(problemFor('gateway.networking.k8s.io/v1', 'HTTPRoute', 'Route_1')).toBeUndefined();
    expect(problemFor('v1', 'Event', 'pod.17a3b4c5d6')).toBeUndefined();
  });
});

describe('namespaceProblem', () => {
  it('accepts RFC 1123 labels and refuses anything else, a path included', () => {
    expect(namespaceProblem('cluster-stacks')).toBeUndefined();
    expect(namespaceProblem('../..')).toMatch(/must be an RFC 1123 label/);
    expect(namespaceProblem('Team_A')).toMatch(/must be an RFC 1123 label/);
    expect(namespaceProblem('a'.repeat(64))).toMatch(/over the 63/);
  });
});
