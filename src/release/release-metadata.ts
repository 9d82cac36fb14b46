// metadata.yaml of a release: which stack version, Kubernetes patch and component versions it carries.
import { type SemVer, semver } from '../core/semver-functions.js';
import { decodeYamlDocument } from '../yaml/kube-yaml.js';
import type { Problem } from '../core/problem.js';
import { formatReleaseTag, type ReleaseTag } from '../core/release-tag.js';
import { formatDotVersion, parseAnyVersion, sameVersion, type StackVersion } from '../core/stack-version.js';

export const METADATA_FILE = 'metadata.yaml';
const METADATA_API_VERSION = 'metadata.clusterstack.x-k8s.io/v1alpha1';

export interface ReleaseMetadata {
  clusterStack: StackVersion;
  /** Kubernetes version with patch, without the leading v: `1.30.4`. */
  kubernetesVersion: string;
  /** The clusterAddon version as written (`v2`); releases sharing it share addon output. */
  clusterAddonVersion: string;
  nodeImageVersion?: string;
}

export type MetadataResult =
  { metadata: ReleaseMetadata; problems: [] } | { metadata?: undefined; problems: Problem[] };

/**
 * A Kubernetes release version with patch (`v1.30.4` or `1.30.4`): Kubernetes versions are semver,
 * so semver's parser reads them; pre-releases, build metadata and padding are not release versions.
 */
function kubernetesPatchVersion(value: unknown): SemVer | undefined {
  if (typeof value !== 'string' || value !== value.trim()) return undefined;
  const parsed = semver.parse(value);
  return parsed && parsed.prerelease.length === 0 && parsed.build.length === 0 ? parsed : undefined;
}

/** Parses and validates metadata.yaml against the release tag it came with; reports every problem. */
export function parseReleaseMetadata(text: string, tag: ReleaseTag): MetadataResult {
  const source = `${formatReleaseTag(tag)}/${METADATA_FILE}`;
  let document: unknown;
  try {
    document = decodeYamlDocument(text).value;
  } catch (error) {
    return { problems: [{ source, message: `is not valid YAML: ${(error as Error).message}` }] };
  }
  const problems: Problem[] = [];
  const root = isRecord(document) ? document : {};
  if (!isRecord(document)) problems.push({ source, message: 'must be a YAML mapping with apiVersion and versions' });
  if (root.apiVersion !== undefined && root.apiVersion !== METADATA_API_VERSION) {
    problems.push({
      source,
      path: 'apiVersion',
      message: `must be ${METADATA_API_VERSION}, found ${String(root.apiVersion)}`,
    });
  }
  const versions = isRecord(root.versions) ? root.versions : {};
  const components = isRecord(versions.components) ? versions.components : {};

  let clusterStack: StackVersion | undefined;
  if (typeof versions.clusterStack !== 'string') {
    problems.push({ source, path: 'versions.clusterStack', message: 'is required (the stack version, e.g. v3)' });
  } else {
    try {
      clusterStack = parseAnyVersion(versions.clusterStack);
      if (!sameVersion(clusterStack, tag.version)) {
        problems.push({
          source,
          path: 'versions.clusterStack',
          message: `says ${versions.clusterStack} but the release tag says ${formatDotVersion(tag.version)}; the tag and metadata.yaml must agree`,
        });
      }
    } catch (error) {
      problems.push({ source, path: 'versions.clusterStack', message: (error as Error).message });
    }
  }

  let kubernetesVersion: string | undefined;
  const kubernetes = versions.kubernetes;
  const parsed = kubernetesPatchVersion(kubernetes);
  if (!parsed) {
    problems.push({
      source,
      path: 'versions.kubernetes',
      message: `must be a Kubernetes version with patch such as v1.30.4, found ${JSON.stringify(kubernetes ?? null)}`,
    });
  } else {
    kubernetesVersion = parsed.version;
    if (parsed.major !== tag.kubernetesMajor || parsed.minor !== tag.kubernetesMinor) {
      problems.push({
        source,
        path: 'versions.kubernetes',
        message: `is ${String(kubernetes)} but the release tag is for Kubernetes ${tag.kubernetesMajor}.${tag.kubernetesMinor}`,
      });
    }
  }

  const clusterAddon = components.clusterAddon;
  if (typeof clusterAddon !== 'string' || clusterAddon === '') {
    problems.push({
      source,
      path: 'versions.components.clusterAddon',
      message: 'is required (the cluster addon version, e.g. v2)',
    });
  } else {
    try {
      parseAnyVersion(clusterAddon);
    } catch (error) {
      problems.push({ source, path: 'versions.components.clusterAddon', message: (error as Error).message });
    }
  }
  const nodeImage = components.nodeImage;
  if (nodeImage !== undefined && typeof nodeImage !== 'string') {
    problems.push({ source, path: 'versions.components.nodeImage', message: 'must be a string such as v1' });
  }

  if (problems.length > 0 || !clusterStack || !kubernetesVersion || typeof clusterAddon !== 'string')
    return { problems };
  const metadata: ReleaseMetadata = { clusterStack, kubernetesVersion, clusterAddonVersion: clusterAddon };
  if (typeof nodeImage === 'string') metadata.nodeImageVersion = nodeImage;
  return { metadata, problems: [] };
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
