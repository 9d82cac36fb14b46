// The library entry of clusterstack-gitops (`import ... from 'clusterstack-gitops'`): what the CLI
// does, as functions. The stages in order: read inputs -> plan (list sources, resolve, load the kept
// releases) -> render (helm) -> publish (directory, Git, pull request, OCI). Everything else in the
// package is internal and may change without notice; test/package-entry.test.ts pins this list.

// --- Read the inputs and plan -------------------------------------------------------------------

/** Reads ClusterStacks, Clusters and the objects they reference from YAML files and directories. */
export { readInputFiles } from './inputs/read-input-files.js';
/** The objects read from input files, and the problems that stopped some of them. */
export type { ParsedManifests, SourcedObject } from './inputs/parse-manifests.js';
/** Opens release sources by location (`dir`, `github:owner/repo`, `oci://registry/repo`), each once. */
export { createSourceOpener } from './sources/open-release-source.js';
/** Options of createSourceOpener (cache, tokens, fetch, logger) and the opener it returns. */
export type { SourceOpener, SourceOptions } from './sources/open-release-source.js';
/** Lists each release source once, resolves which releases to keep, and loads the kept ones. */
export { buildPlan } from './plan/build-plan.js';
/** buildPlan's inputs and its result: the resolution, the loaded releases, problems and warnings. */
export type { LoadedRelease, Plan, PlanOptions } from './plan/build-plan.js';
/** The plan as `clusterstack plan --json` prints it. */
export { planReport } from './plan/plan-report.js';
/** The shape of planReport's result. */
export type { PlanReport } from './plan/plan-report.js';

// --- Render ---------------------------------------------------------------------------------------

/** What a target holds, read once into a typed value (provenance, unit digests, provider locks, request assignments). */
export { readPublishedState } from './output/published-state.js';
/** The shape of readPublishedState's result. */
export type { PublishedState } from './output/published-state.js';
/** Decides every unit of a plan against the published state: reuse, render or withhold, with why. */
export { decideUnits } from './render/unit-decisions.js';
/** decideUnits' settings and result. */
export type { UnitPlan, UnitPlanSettings, UnitDecision } from './render/unit-decisions.js';
/** Carries out decided units into the output tree (renders those marked to render, reuses the rest). */
export { renderOutput } from './render/render-output.js';
/** renderOutput's options and result. */
export type { RenderOptions, RenderOutcome, RenderProgress } from './render/render-output.js';
/** What rendering needs from outside (helm implements it). */
export type { RenderDependencies } from './render/render-dependencies.js';
/** The output model: what a tree records of itself, and its render summary. */
export type { Provenance, UnitRecord, WithheldEntry } from './output/provenance.js';
/** The render summary behind the README, pull request bodies and reports. */
export type { RenderSummary } from './output/render-summary.js';
/** What renderOutput does with rendered Secrets: `refuse`, `drop`, `allow` or `encrypt` (SOPS, age). */
export type { SecretPolicy } from './render/secret-policy.js';
/** For `encrypt`: the recipients from explicit ones or a `.sops.yaml`, checked (UnitPlanSettings.encryption). */
export { resolveSecretEncryption } from './secrets/secret-encryption.js';
/** resolveSecretEncryption's input and result. */
export type { EncryptionInput, SecretEncryption } from './secrets/secret-encryption.js';
/** Flux or Argo CD wiring options for PipelineOptions.gitops. */
export type { GitOpsEngine, WiringOptions } from '../gitops/wiring/render-wiring.js';
/** Where Flux or Argo CD fetch the tree from. */
export type { WiringSource } from '../gitops/wiring/wiring-options.js';
/** The RenderDependencies backed by the helm binary (bundled, configured, or on PATH). */
export { createHelmDependencies } from '../renderers/helm-dependencies.js';
/** createHelmDependencies' result: RenderDependencies plus a count of helm processes started. */
export type { HelmDependencies } from '../renderers/helm-dependencies.js';

// --- Pipeline -------------------------------------------------------------------------------------

/** The one path from a plan to a published tree (render, wire, guard, summarize, publish), as the CLI and the controller take it. */
export { renderAndPublish, MassDeletionRefusedError } from './pipeline/render-and-publish.js';
/** renderAndPublish's dependencies, options and result. */
export type { PipelineDependencies, PipelineOptions, PipelineResult } from './pipeline/render-and-publish.js';

// --- Publish --------------------------------------------------------------------------------------

/** The seam every output implements and what a publish reports. */
export type { Publisher, PublishResult } from '../gitops/publisher.js';
/** The rendered tree: relative path -> content. */
export type { RenderedTree } from './output/rendered-tree.js';
/** What changed, for commit messages and pull requests. */
export type { ChangeSummary } from './output/tree-changes.js';
/** Publishes the tree into a local directory, swapped in with renames. */
export { DirectoryPublisher } from '../gitops/directory-publisher.js';
/** Commits the tree to a Git branch (local or remote) when it changed. */
export { GitPublisher } from '../gitops/git-publisher.js';
/** GitPublisher's options. */
export type { GitPublisherOptions } from '../gitops/git-publisher.js';
/** Proposes the tree as a GitHub pull request from its own branch. */
export { PullRequestPublisher } from '../gitops/pull-request-publisher.js';
/** PullRequestPublisher's options. */
export type { PullRequestPublisherOptions } from '../gitops/pull-request-publisher.js';
/** Pushes the tree as one reproducible OCI artifact. */
export { OciArtifactPublisher } from '../gitops/oci-artifact-publisher.js';
/** OciArtifactPublisher's options. */
export type { OciArtifactPublisherOptions } from '../gitops/oci-artifact-publisher.js';

// --- YAML as Kubernetes reads it ------------------------------------------------------------------

/** Decodes every document of a YAML stream as Kubernetes (sigs.k8s.io/yaml) reads it. */
export { decodeYamlDocuments } from './yaml/kube-yaml.js';
/** Encodes a value as YAML that Kubernetes and kustomize read back unchanged. */
export { encodeYaml } from './yaml/kube-yaml.js';
/** The error decodeYamlDocuments throws, with the line. */
export { YamlDecodeError } from './yaml/kube-yaml.js';

// --- Failures -------------------------------------------------------------------------------------

/** An error that says what should happen next (its FailureKind). */
export { Failure } from './core/failure.js';
/** The kind of any error: fix-input, retry, wait or internal. */
export { failureKindOf } from './core/failure.js';
/** The failure kind a condition reason stands for, by its suffix. */
export { failureKindOfReason } from './core/failure.js';
/** What each failure kind does: requeue, event type, Argo CD health, exit code, reason suffixes. */
export { FAILURE_REACTIONS } from './core/failure.js';
/** The CLI's exit codes and their meaning. */
export { EXIT_CODES } from './core/failure.js';
/** The failure kinds and the reaction each one gets. */
export type { FailureKind, FailureReaction } from './core/failure.js';
/** A problem with an input, a release or a chart, as plan and render report it. */
export type { Problem } from './core/problem.js';
/** Problems with the inputs that stop a command (exit code 1). */
export { InputError } from './core/problem.js';
