// A CustomResourceDefinition with no schema to speak of, for kinds a test needs served on a real API
// server but whose real CRDs the engine cache does not hold (a made-up provider, the
// cluster-stack-operator's, Kraan's AddonsLayer: the Go module proxy refuses github.com/fidelity/kraan
// at every version): what the test checks is the controller's traffic, not the kind's schema.

/**
 * A CRD of `group`/v1alpha1 `kind` (plural `plural`) that keeps any field, namespaced unless `scope`
 * says Cluster; `statusSubresource` adds /status.
 */
export function schemalessCrd(
  group: string,
  kind: string,
  plural: string,
  statusSubresource: boolean,
  scope: 'Namespaced' | 'Cluster' = 'Namespaced',
): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope,
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
          ...(statusSubresource ? { subresources: { status: {} } } : {}),
        },
      ],
    },
  };
}
