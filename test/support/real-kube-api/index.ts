// Real Kubernetes engines for tests (docs/real-engines.md): the engine cache, API servers,
// kube-controller-manager, CRD installation and strict server-side validation.
export { builtEngine, engineBinary, engineCacheDir, engineCrdFiles, pinnedEngines, type BuiltEngine, type PinnedEngine } from './engine-cache.js';
export { installCrds } from './install-crds.js';
export { kubeClient, type KubeClient, type KubeResponse } from './kube-client.js';
export { startKubeControllerManager, type KubeControllerManager } from './kube-controller-manager.js';
export { startLocalProcess, waitUntil, type LocalProcess } from './local-process.js';
export { distinctFreePorts, kubeconfigYaml, SERVICE_CIDR, startRealKubeApi, type KubeCredential, type RealKubeApi } from './real-kube-api.js';
export { startFluxControllers, type FluxControllers } from './flux-controllers.js';
export { describeVerdicts, documentsOfFiles, servedKinds, validateOnServer, type ObjectVerdict, type SourceDocument } from './server-side-validation.js';
export { classStatus, daemonSetRolledOut, deploymentRolledOut, fluxTestKit, isReady, kubeNow, KUSTOMIZATIONS, type FluxTestKit } from './flux-test-kit.js';
