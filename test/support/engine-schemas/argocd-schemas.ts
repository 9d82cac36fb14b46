// Schema facts for the Argo CD Application (argoproj.io/v1alpha1), read from argoproj/argo-cd
// manifests/crds/application-crd.yaml and pkg/apis/application/v1alpha1/types.go (Argo CD 3.x).
import { any, arr, bool, int, kindFacts, map, obj, str, type Fact, type KindFacts } from './schema-facts.js';

const applicationSource: Fact = obj(
  {
    repoURL: str(),
    path: str(),
    targetRevision: str(),
    chart: str(),
    ref: str(),
    name: str(),
    helm: any,
    kustomize: any,
    directory: any,
    plugin: any,
  },
  ['repoURL'],
);

const applicationSpec: Fact = obj(
  {
    project: str(),
    destination: obj({ server: str(), namespace: str(), name: str() }),
    source: applicationSource,
    sources: arr(applicationSource),
    sourceHydrator: any,
    syncPolicy: obj({
      automated: obj({ prune: bool, selfHeal: bool, allowEmpty: bool, enabled: bool }),
      syncOptions: arr(str()),
      retry: obj({ limit: int, backoff: obj({ duration: str(), factor: int, maxDuration: str() }), refresh: bool }),
      managedNamespaceMetadata: obj({ labels: map(str()), annotations: map(str()) }),
    }),
    ignoreDifferences: any,
    info: arr(obj({ name: str(), value: str() }, ['name', 'value'])),
    revisionHistoryLimit: int,
  },
  ['destination', 'project'],
);

export const ARGOCD_SCHEMAS: readonly KindFacts[] = [
  kindFacts(
    'argoproj.io/v1alpha1',
    'Application',
    'argoproj/argo-cd manifests/crds/application-crd.yaml',
    { spec: applicationSpec, operation: any },
    ['spec'],
  ),
];
