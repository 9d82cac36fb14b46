// What a render decided, per stack, release and cluster: the data behind the tree's README, pull
// request bodies and reports.
import type { ClusterRequestsSummary } from './cluster-requests-record.js';
import type { HookDecision } from './helm-hooks-record.js';
import type { WithheldEntry } from './provenance.js';

export interface RenderSummary {
  inputDigest: string;
  stacks: {
    namespace: string;
    name: string;
    /** `<provider>-<name>-<maj>-<min>` and channel: which release tags belong to the stack. */
    prefix: string;
    channel: string;
    latestRelease: string | null;
    usableVersions: string;
    releases: { name: string; version: string; status: string; reasons: string[] }[];
  }[];
  clusters: {
    namespace: string;
    name: string;
    release: string;
    addonVersion: string;
    stages: string[];
    status: string;
    /** spec.topology.version, when set (the version an upgrade moves the control plane to). */
    kubernetesVersion?: string;
    /** The release's stages under AfterClusterUpgrade in its clusteraddon.yaml, when it has any. */
    afterUpgradeStages?: string[];
  }[];
  /** Addon layers per cluster (absent without AddonsLayers): rendered, on hold, or withheld and why. */
  layers?: LayerSummary[];
  withheld: WithheldEntry[];
  /**
   * Objects several units render, written once (provenance.json's sharedObjects): the path of the
   * copy, the object, and the releases (or cluster stages) rendering it. Optional for summaries
   * built before shared objects existed.
   */
  sharedObjects?: { path: string; object: string; renderedBy: string[] }[];
  /** Cluster API providers in the tree (management/providers/), when there are any. */
  providers?: {
    kind: string;
    namespace: string;
    name: string;
    version: string;
    contract: string;
    source: string;
    dir: string;
  }[];
  /** Notes of every published unit, prefixed with its directory. */
  notes: string[];
  /** With a scheduler configuration: the ClusterProfiles and every ClusterRequest's phase. */
  clusterRequests?: ClusterRequestsSummary;
  /** Secrets written SOPS-encrypted (--secrets encrypt), by file, with what decrypts them. */
  encryptedSecrets?: { file: string; namespace: string; name: string; decryptedWith: string }[];
  /** Helm hook objects and what became of each (absent when no chart rendered one). */
  helmHooks?: HelmHookSummary[];
}

/** One helm hook object, as every unit in `units` renders it, and what became of it. */
export interface HelmHookSummary {
  /** `Job kube-system/ingress-nginx-admission-create`. */
  object: string;
  /** helm.sh/hook, comma-separated. */
  events: string;
  weight: number;
  /** helm.sh/hook-delete-policy, or `-`. */
  deletePolicy: string;
  decision: HookDecision;
  /** `helm-hooks/pre-w0/` below each unit, `unit directory`, or `-` when left out. */
  where: string;
  reason: string;
  /** The unit directories rendering it. */
  units: string[];
}

/** One addon layer on one cluster. */
export interface LayerSummary {
  namespace: string;
  cluster: string;
  layer: string;
  version: string;
  /** `rendered`, `on hold`, `withheld` or `withheld, previous output kept`. */
  status: string;
  /** Why it is withheld. */
  reason?: string;
  /** What the engine waits for first: `base@1.2.0`, `cluster-stack`. */
  after: string[];
  /** Dependencies on hold: applying waits for them. */
  waitingOn: string[];
}
