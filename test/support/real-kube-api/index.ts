// Real Kubernetes engines for tests (docs/real-engines.md): the engine cache, API servers,
// kube-controller-manager, CRD installation and strict server-side validation.
export { builtEngine, engineBinary, engineCrdFiles, pinnedEngines } from './engine-cache.js';
export { crdFilesServing, installCrds, kindsOfFiles } from './install-crds.js';
export { type KubeClient } from './kube-client.js';
export { startKubeControllerManager, type KubeControllerManager } from './kube-controller-manager.js';
export { waitUntil, type LocalProcess } from './local-process.js';
export { distinctFreePorts, serverSeedKey, startRealKubeApi, type RealKubeApi } from './real-kube-api.js';
export { keptSeed, seedKey } from './etcd-seed.js';
export { emptyServer, serverKeys } from './server-emptying.js';
export { startFluxControllers, type FluxControllers } from './flux-controllers.js';
export { describeVerdicts, documentsOfFiles, validateOnServer, type ObjectVerdict } from './server-side-validation.js';
export {
  describeAuditEvent,
  grantedNow,
  serviceAccountKubeconfig,
  serviceAccountUserName,
  wireIdentity,
  type AuditEvent,
} from './service-account.js';
