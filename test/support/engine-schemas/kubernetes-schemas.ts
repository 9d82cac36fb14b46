// Schema facts for the plain kinds beside the engines' own: kustomize's kustomization.yaml
// (kustomize.config.k8s.io/v1beta1, the fields we and kustomize's docs use) and a core ConfigMap.
import { any, bool, kindFacts, map, obj, str, arr, type KindFacts } from './schema-facts.js';

export const KUSTOMIZE_SCHEMAS: readonly KindFacts[] = [
  {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    source: 'kubectl.docs.kubernetes.io/references/kustomize/kustomization',
    schema: obj(
      {
        apiVersion: str({ enum: ['kustomize.config.k8s.io/v1beta1'] }),
        kind: str({ enum: ['Kustomization'] }),
        metadata: any,
        resources: arr(str()),
        components: arr(str()),
        patches: any,
        namespace: str(),
        labels: any,
      },
      ['apiVersion', 'kind'],
    ),
  },
];

export const CORE_SCHEMAS: readonly KindFacts[] = [
  kindFacts('v1', 'ConfigMap', 'Kubernetes core/v1', { data: map(str()), binaryData: map(str()), immutable: bool }, []),
];
