// The Go runtime of every Go program the tests start (the engines, kubectl kustomize, sops, skopeo,
// the registries), unless a test's environment says otherwise: one thread running Go code and a
// collector that runs a quarter as often. Half of an API server's CPU went to its collector and to
// threads handing work over; with these, a server's start, CRDs and a minute idle took about 30% less
// CPU (13.3 -> 9.3 s), and CRDs installed no slower; a kustomize build of deploy/ took 66 instead of
// 87 ms. Tests assert what the programs do, not how fast their runtime is, as helm's runner does for
// renders (renderers/helm-runner.ts).
export const TEST_GO_RUNTIME: Readonly<Record<string, string>> = { GOMAXPROCS: '1', GOGC: '400' };
