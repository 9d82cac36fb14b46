// Real OCI registries (Debian docker-registry), their token server, and a corrupting proxy for tests.
export { startCorruptingProxy } from './corrupting-proxy.js';
export { freePort, startRegistry, type TestRegistry } from './start-registry.js';
