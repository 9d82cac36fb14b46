// Schema facts for the Flux kinds our wiring writes. Read from fluxcd/kustomize-controller
// api/v1/kustomization_types.go and docs/spec/v1/kustomizations.md (healthCheckExprs: Flux 2.5+),
// and fluxcd/source-controller api/v1/gitrepository_types.go and api/v1/ocirepository_types.go
// (OCIRepository v1: Flux 2.6+).
import { any, arr, bool, kindFacts, map, obj, str, type Fact, type KindFacts } from './schema-facts.js';

/** metav1.Duration as Flux validates it (`+kubebuilder:validation:Pattern`). */
const DURATION = /^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$/;
/** Source timeouts allow no hours. */
const SOURCE_TIMEOUT = /^([0-9]+(\.[0-9]+)?(ms|s|m))+$/;
const localObjectReference = obj({ name: str() }, ['name']);

const kustomizationSpec: Fact = obj(
  {
    commonMetadata: obj({ annotations: map(str()), labels: map(str()) }),
    components: arr(str()),
    decryption: any,
    deletionPolicy: str({ enum: ['MirrorPrune', 'Delete', 'WaitForTermination', 'Orphan'] }),
    dependsOn: arr(obj({ name: str(), namespace: str(), readyExpr: str() }, ['name'])),
    force: bool,
    healthCheckExprs: arr(
      obj({ apiVersion: str(), kind: str(), current: str(), inProgress: str(), failed: str() }, [
        'apiVersion',
        'kind',
        'current',
      ]),
    ),
    healthChecks: arr(obj({ apiVersion: str(), kind: str(), name: str(), namespace: str() }, ['kind', 'name'])),
    ignoreMissingComponents: bool,
    images: any,
    interval: str({ pattern: DURATION }),
    kubeConfig: obj({ secretRef: obj({ name: str(), key: str() }, ['name']), configMapRef: localObjectReference }),
    namePrefix: str(),
    nameSuffix: str(),
    patches: any,
    path: str(),
    postBuild: any,
    prune: bool,
    retryInterval: str({ pattern: DURATION }),
    serviceAccountName: str(),
    sourceRef: obj(
      {
        apiVersion: str(),
        kind: str({ enum: ['OCIRepository', 'GitRepository', 'Bucket', 'ExternalArtifact'] }),
        name: str(),
        namespace: str(),
      },
      ['kind', 'name'],
    ),
    suspend: bool,
    targetNamespace: str(),
    timeout: str({ pattern: DURATION }),
    wait: bool,
  },
  ['interval', 'prune', 'sourceRef'],
);

const gitRepositorySpec: Fact = obj(
  {
    url: str({ pattern: /^(http|https|ssh):\/\/.*$/ }),
    secretRef: localObjectReference,
    interval: str({ pattern: DURATION }),
    timeout: str({ pattern: SOURCE_TIMEOUT }),
    ref: obj({ branch: str(), tag: str(), semver: str(), name: str(), commit: str() }),
    verify: any,
    proxySecretRef: localObjectReference,
    ignore: str(),
    suspend: bool,
    recurseSubmodules: bool,
    include: any,
  },
  ['url', 'interval'],
);

const ociRepositorySpec: Fact = obj(
  {
    url: str({ pattern: /^oci:\/\/.*$/ }),
    ref: obj({ digest: str(), semver: str(), semverFilter: str(), tag: str() }),
    layerSelector: obj({ mediaType: str(), operation: str({ enum: ['extract', 'copy'] }) }),
    provider: str({ enum: ['generic', 'aws', 'azure', 'gcp'] }),
    credential: str({ enum: ['ServiceAccountToken'] }),
    audiences: arr(str()),
    secretRef: localObjectReference,
    verify: any,
    serviceAccountName: str(),
    certSecretRef: localObjectReference,
    proxySecretRef: localObjectReference,
    interval: str({ pattern: DURATION }),
    timeout: str({ pattern: SOURCE_TIMEOUT }),
    ignore: str(),
    insecure: bool,
    suspend: bool,
  },
  ['url', 'interval'],
);

export const FLUX_SCHEMAS: readonly KindFacts[] = [
  kindFacts(
    'kustomize.toolkit.fluxcd.io/v1',
    'Kustomization',
    'fluxcd/kustomize-controller api/v1',
    { spec: kustomizationSpec },
    ['spec'],
  ),
  kindFacts(
    'source.toolkit.fluxcd.io/v1',
    'GitRepository',
    'fluxcd/source-controller api/v1/gitrepository_types.go',
    { spec: gitRepositorySpec },
    ['spec'],
  ),
  kindFacts(
    'source.toolkit.fluxcd.io/v1',
    'OCIRepository',
    'fluxcd/source-controller api/v1/ocirepository_types.go',
    { spec: ociRepositorySpec },
    ['spec'],
  ),
];
