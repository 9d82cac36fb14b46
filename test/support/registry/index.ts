// Real OCI registries (Debian docker-registry), their token server, and a corrupting proxy for tests.
export { startCorruptingProxy, type CorruptingProxy } from './corrupting-proxy.js';
export { freePort, REGISTRY_BINARY, startRegistry, type RegistryAuth, type TestRegistry } from './start-registry.js';
export { startTokenIssuer, type TokenIssuer } from './token-issuer.js';
