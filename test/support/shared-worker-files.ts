// The test files that share a worker process (Vitest's isolate: false, vitest.config.ts): run one
// after another in one process, they import vitest, the sources and their packages once per worker
// instead of once per file. A fork and its imports cost about 0.3 CPU-s a file, more than many of
// these files' tests: these 66 files took 33.1 CPU-s (48 s) isolated and 15.7 CPU-s (21 s) sharing
// workers, the same 609 tests passing.
//
// A file belongs here only when nothing it does outlives it or reaches the next file: no vi.* at all
// (mocks, spies, fake timers, stubbed env or globals, module resets), no writes to process.env, no
// chdir, no process listeners left behind, no assertion on a module-level counter or memo the
// sources keep (content-digest's, the file digest memo's), and no server of its own on loopback (a
// fake GitHub or registry: run shuffled in shared workers, files with one saw another file's
// releases, and a connect timeout came from the wrong server). Temporary files under os.tmpdir()
// are fine. Checked by running the list shuffled in shared workers with three seeds
// (`npx vitest run --project 'shared*' --sequence.shuffle --sequence.seed=<n>`). A file that starts
// doing any of that leaves this list; a file not on it runs in a fresh process, as before.
export const SHARED_WORKER_FILES = [
  'test/addon-wait-conditions.test.ts',
  'test/argocd-wiring.test.ts',
  'test/build-plan.test.ts',
  'test/canonical-json.test.ts',
  'test/capi-cluster.test.ts',
  'test/cel-syntax-memo.test.ts',
  'test/class-namespace.test.ts',
  'test/classify-inputs.test.ts',
  'test/cluster-requests-wiring.test.ts',
  'test/controller-runtime/extension-server.test.ts',
  'test/controller-runtime/shutdown.test.ts',
  'test/controller-runtime/work-queue.test.ts',
  'test/controller/addons-layer-status.test.ts',
  'test/controller/apply-concurrency.test.ts',
  'test/controller/cluster-request-state.test.ts',
  'test/controller/deploy-runtime-extension.test.ts',
  'test/controller/lifecycle-hook-decision.test.ts',
  'test/controller/next-reconcile.test.ts',
  'test/controller/publish-tracker.test.ts',
  'test/controller/source-listings.test.ts',
  'test/controller/status.test.ts',
  'test/crd-rules.test.ts',
  'test/crds.test.ts',
  'test/directory-publisher-links.test.ts',
  'test/directory-publisher-prestage.test.ts',
  'test/directory-publisher.test.ts',
  'test/docs-links.test.ts',
  'test/field-line.test.ts',
  'test/flux-wiring.test.ts',
  'test/http-retry.test.ts',
  'test/kustomization-yaml.test.ts',
  'test/label-only-change.test.ts',
  'test/layers/addon-moves.test.ts',
  'test/layers/addons-layer-validation.test.ts',
  'test/layers/resolve-layers.test.ts',
  'test/manifest-objects.test.ts',
  'test/mass-deletion-guard.test.ts',
  'test/object-name-rules.test.ts',
  'test/oci-reference.test.ts',
  'test/providers/customize-components.test.ts',
  'test/providers/envsubst.test.ts',
  'test/providers/guard-providers.test.ts',
  'test/providers/provider-changes.test.ts',
  'test/providers/validate-provider.test.ts',
  'test/published-target.test.ts',
  'test/pull-request-body.test.ts',
  'test/release-cache.test.ts',
  'test/release-format.test.ts',
  'test/release-tag.test.ts',
  'test/render-progress.test.ts',
  'test/rendered-tree.test.ts',
  'test/reproducible-tar.test.ts',
  'test/requested-clusters.test.ts',
  'test/resolve-releases.test.ts',
  'test/safe-extract.test.ts',
  'test/sandboxed-template.test.ts',
  'test/schedule-requests.test.ts',
  'test/scheduler-config.test.ts',
  'test/secret-encryption.test.ts',
  'test/shards/shard-scope.test.ts',
  'test/sops-document.test.ts',
  'test/sort-keys.test.ts',
  'test/stack-version.test.ts',
  'test/tree-changes.test.ts',
  'test/validate.test.ts',
  'test/withhold-units.test.ts',
];
