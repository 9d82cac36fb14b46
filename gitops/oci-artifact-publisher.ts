// `--oci oci://registry/repo:tag`: the rendered tree as one OCI artifact, a single reproducible gzip
// tar layer, tagged with the requested tag and a content tag; nothing is pushed when the tag holds
// the same tree already.
//
// Media types, chosen so that both GitOps engines take the artifact without configuration:
// - layer `application/vnd.oci.image.layer.v1.tar+gzip`. Flux's OCIRepository extracts the first
//   layer when no `layerSelector` is set and only needs it to be a gzip tar (source-controller
//   docs/spec/v1/ocirepositories.md "Layer selector"; internal/controller/ocirepository_controller.go
//   selectLayer). Argo CD (v3.1+) wants exactly one tar or tar+gzip content layer whose media type is
//   allow-listed; the default list is this type and Helm's chart type, and Flux's own
//   `application/vnd.cncf.flux.content.v1.tar+gzip` needs ARGOCD_REPO_SERVER_OCI_LAYER_MEDIA_TYPES
//   (argo-cd docs/user-guide/oci.md "Usage Guidelines"; util/oci/client.go Extract).
// - config: neither engine reads it (Flux never opens it; Argo CD copies it along with oras). We use
//   the OCI 1.1 empty config `application/vnd.oci.empty.v1+json` with an `artifactType`, the shape
//   `oras push` produces and Argo CD's docs use as their example, rather than Flux's
//   `application/vnd.cncf.flux.config.v1+json` (fluxcd/pkg oci.CanonicalConfigMediaType), which
//   would suggest `flux push artifact` made it.
// - the layer carries an `org.opencontainers.image.title`, so `oras pull` writes it as a file.
// Annotations: `source`, `revision` (the sha256 of the uncompressed tar, which names the tree
// whatever zlib compressed it) and `created` (the epoch when reproducible, so the same tree always
// gives the same manifest digest). Flux copies them into the artifact's metadata; Argo CD shows them.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { OciError } from '../src/oci/oci-error.js';
import {
  EMPTY_CONFIG,
  type OciManifest,
  OCI_IMAGE_CONFIG,
  OCI_MANIFEST,
  TITLE_ANNOTATION,
} from '../src/oci/oci-manifest.js';
import { type OciArtifactReference, parseOciArtifactReference } from '../src/oci/oci-reference.js';

// The reference parser lives with the other OCI references; its names stay importable from here.
export { type OciArtifactReference, parseOciArtifactReference } from '../src/oci/oci-reference.js';
import { buildArtifactManifest } from '../src/oci/artifact-manifest.js';
import { type ManifestResult, RegistryClient, type RegistryCredentials } from '../src/oci/registry-client.js';
import { sha256Digest } from '../src/release/content-digest.js';
import type { RetryPolicy, Sleep } from '../src/http/http-retry.js';
import type { Logger } from '../src/core/logger.js';
import { diffTrees, type RenderedTree } from '../src/output/rendered-tree.js';
import type { ChangeSummary } from '../src/output/tree-changes.js';
import type { Publisher, PublishResult } from './publisher.js';
import { PublishError, type PublishErrorKind } from './publish-error.js';
import { readTarTree, reproducibleTarGzip } from './reproducible-tar.js';
import { crashPoint } from './crash-point.js';

export const RENDERED_TREE_ARTIFACT_TYPE = 'application/vnd.clusterstack-gitops.rendered-tree.v1';
export const RENDERED_TREE_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip';
const RENDERED_TREE_FILE = 'rendered-tree.tar.gz';
export const SOURCE_ANNOTATION = 'org.opencontainers.image.source';
export const REVISION_ANNOTATION = 'org.opencontainers.image.revision';
export const CREATED_ANNOTATION = 'org.opencontainers.image.created';
/** `created` of a reproducible artifact: the Unix epoch, as reproducible-builds tools use. */
export const REPRODUCIBLE_CREATED = '1970-01-01T00:00:00Z';

export interface OciArtifactPublisherOptions {
  /** `oci://registry[:port]/repository:tag` */
  reference: string;
  /** The `org.opencontainers.image.source` annotation: where the inputs live (e.g. their Git URL). */
  source?: string;
  /** Talk `http://` to the registry (`--plain-http`). */
  plainHttp?: boolean;
  credentials?: RegistryCredentials;
  /** Default true: `created` is the epoch, so the same tree gives the same manifest digest. */
  reproducible?: boolean;
  /** The time `created` records when not reproducible. */
  clock?: () => Date;
  fetch?: typeof fetch;
  retry?: RetryPolicy;
  sleep?: Sleep;
  timeoutMs?: number;
  /** One registry call in total, retries included (default 5 minutes). */
  totalTimeoutMs?: number;
  /** Where a downloaded layer is held while it is read (default: the OS temp directory). */
  tempDir?: string;
  logger?: Logger;
}

/** What the tag holds now: its manifest and the tree layer in it. */
interface CurrentArtifact {
  manifest: ManifestResult;
  layer: { digest: string; size: number };
}

/** Publishes the tree as an OCI artifact; `revision` is the manifest digest. */
export class OciArtifactPublisher implements Publisher {
  readonly target: string;
  private readonly ref: OciArtifactReference;
  private readonly client: RegistryClient;
  private readonly reproducible: boolean;
  private readonly clock: () => Date;
  private readonly tempDir: string;
  // The tree read for a manifest digest, so publish() after readPrevious() does not download it again.
  private lastRead: { digest: string; tree: RenderedTree } | undefined;

  constructor(private readonly options: OciArtifactPublisherOptions) {
    this.ref = parseOciArtifactReference(options.reference);
    this.target = `oci://${this.ref.registry}/${this.ref.repository}:${this.ref.tag}`;
    this.reproducible = options.reproducible ?? true;
    this.clock = options.clock ?? (() => new Date());
    this.tempDir = options.tempDir ?? os.tmpdir();
    this.client = new RegistryClient({
      registry: this.ref.apiHost,
      plainHttp: options.plainHttp ?? false,
      ...(options.credentials ? { credentials: options.credentials } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.retry ? { retry: options.retry } : {}),
      ...(options.sleep ? { sleep: options.sleep } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.totalTimeoutMs !== undefined ? { totalTimeoutMs: options.totalTimeoutMs } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    });
  }

  /** The tree the tag holds (empty when the tag or the repository does not exist yet). */
  async readPrevious(): Promise<RenderedTree> {
    const current = await this.current();
    return current === null ? new Map() : this.readTree(current);
  }

  /** Pushes the tree unless the tag holds it already: blobs, the manifest, the content tag, then the tag. */
  async publish(tree: RenderedTree, _change: ChangeSummary): Promise<PublishResult> {
    let archive: { tar: Buffer; gzip: Buffer };
    try {
      archive = reproducibleTarGzip(tree);
    } catch (error) {
      if (error instanceof PublishError) throw error;
      throw new PublishError('invalid-input', `cannot pack the rendered tree: ${(error as Error).message}`, {
        cause: error,
      });
    }
    const layerDigest = sha256Digest(archive.gzip);
    const treeDigest = sha256Digest(archive.tar);
    const current = await this.current();
    // Same layer, or the same tar compressed by another zlib build: the tag holds this tree.
    if (
      current !== null &&
      (current.layer.digest === layerDigest ||
        current.manifest.manifest.annotations?.[REVISION_ANNOTATION] === treeDigest)
    ) {
      return { changed: false, written: [], removed: [], revision: current.manifest.digest };
    }
    const previous = current === null ? new Map<string, string>() : await this.readTree(current);
    const { written, removed } = diffTrees(previous, tree);

    const annotations: Record<string, string> = {
      [CREATED_ANNOTATION]: this.reproducible
        ? REPRODUCIBLE_CREATED
        : this.clock()
            .toISOString()
            .replace(/\.\d+Z$/, 'Z'),
      [REVISION_ANNOTATION]: treeDigest,
    };
    if (this.options.source !== undefined && this.options.source !== '')
      annotations[SOURCE_ANNOTATION] = this.options.source;
    const manifest = buildArtifactManifest(
      RENDERED_TREE_ARTIFACT_TYPE,
      [
        {
          mediaType: RENDERED_TREE_LAYER,
          digest: layerDigest,
          size: archive.gzip.length,
          annotations: { [TITLE_ANNOTATION]: RENDERED_TREE_FILE },
        },
      ],
      annotations,
    );
    const manifestDigest = sha256Digest(manifest);
    const contentTag = contentTagFor(layerDigest);
    const { repository } = this.ref;
    await this.registry('push', async () => {
      await this.client.pushBlob(repository, Buffer.from(EMPTY_CONFIG.data, 'base64'));
      await this.client.pushBlob(repository, archive.gzip);
      crashPoint('oci:blobs');
      // By digest first, then the content tag, the requested tag last: a refusal on the way leaves
      // the requested tag where it was, never pointing at something half pushed.
      await this.client.pushManifest(repository, manifestDigest, manifest, OCI_MANIFEST);
      crashPoint('oci:manifest');
      await this.client.pushManifest(repository, contentTag, manifest, OCI_MANIFEST);
      crashPoint('oci:content-tag');
      await this.client.pushManifest(repository, this.ref.tag, manifest, OCI_MANIFEST);
      crashPoint('oci:tagged');
    });
    this.lastRead = { digest: manifestDigest, tree: new Map(tree) };
    this.options.logger?.info(
      { target: this.target, revision: manifestDigest, contentTag, written: written.length, removed: removed.length },
      'Pushed rendered tree as an OCI artifact',
    );
    return { changed: true, written, removed, revision: manifestDigest };
  }

  /** The artifact the tag points at, or null when there is none; refuses to treat anything else as a tree. */
  private async current(): Promise<CurrentArtifact | null> {
    let manifest: ManifestResult;
    try {
      manifest = await this.registry('read', () => this.client.getManifest(this.ref.repository, this.ref.tag));
    } catch (error) {
      if (error instanceof PublishError && (error.cause as OciError | undefined)?.kind === 'not-found') return null;
      throw error;
    }
    return { manifest, layer: this.treeLayer(manifest.manifest) };
  }

  private treeLayer(manifest: OciManifest): { digest: string; size: number } {
    const layer = manifest.layers.find((candidate) => candidate.mediaType.endsWith('tar+gzip'));
    const type = manifest.artifactType ?? manifest.config.mediaType;
    if (
      layer === undefined ||
      (manifest.artifactType === undefined && manifest.config.mediaType === OCI_IMAGE_CONFIG)
    ) {
      const what =
        manifest.artifactType === undefined && manifest.config.mediaType === OCI_IMAGE_CONFIG
          ? 'a container image'
          : `an artifact of type ${type} without a tar+gzip layer`;
      throw new PublishError(
        'invalid-target',
        `${this.target} holds ${what}, not a rendered tree; choose another tag or repository so it is not overwritten`,
      );
    }
    return { digest: layer.digest, size: layer.size };
  }

  private async readTree(current: CurrentArtifact): Promise<RenderedTree> {
    if (this.lastRead?.digest === current.manifest.digest) return new Map(this.lastRead.tree);
    const dir = await mkdtemp(path.join(this.tempDir, 'clusterstack-oci-'));
    try {
      const file = path.join(dir, 'layer.tar.gz');
      await this.registry('read', () =>
        this.client.fetchBlob(this.ref.repository, current.layer.digest, file, current.layer.size),
      );
      const tree = readTarTree(await readFile(file), `${this.target} (layer ${current.layer.digest})`);
      this.lastRead = { digest: current.manifest.digest, tree };
      return new Map(tree);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Runs registry calls, turning OciErrors into PublishErrors that say what to do. */
  private async registry<T>(doing: 'read' | 'push', operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (!(error instanceof OciError)) throw error;
      const kinds: Record<OciError['kind'], PublishErrorKind> = {
        auth: 'auth',
        'rate-limited': 'unavailable',
        unavailable: 'unavailable',
        'not-found': 'invalid-target',
        // A registry answering a push with 405 or another refusal: read-only, immutable tags, policy.
        'invalid-release': doing === 'push' ? 'rejected' : 'invalid-target',
      };
      const kind = kinds[error.kind];
      const hint =
        doing === 'push' && kind === 'rejected'
          ? '; the registry refused the push (read-only, immutable tags or a policy): nothing was tagged'
          : '';
      throw new PublishError(
        kind,
        `${doing === 'push' ? 'pushing to' : 'reading'} ${this.target}: ${error.message}${hint}`,
        { cause: error },
      );
    }
  }
}

/** The tag naming the content: `sha-` and the first 12 hex digits of the layer digest. */
export function contentTagFor(layerDigest: string): string {
  return `sha-${layerDigest.slice('sha256:'.length, 'sha256:'.length + 12)}`;
}
