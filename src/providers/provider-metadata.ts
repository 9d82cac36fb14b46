// A provider release's metadata.yaml (clusterctl's `Metadata`: releaseSeries of {major, minor,
// contract}), read with Kubernetes' YAML. The contract of a version is the one its series names; a
// version whose series is missing is refused, as clusterctl refuses it.
import { semver } from '../core/semver-functions.js';
import { decodeYamlDocuments, YamlDecodeError } from '../yaml/kube-yaml.js';
import { Failure } from '../core/failure.js';

export interface ReleaseSeries {
  major: number;
  minor: number;
  contract: string;
}

/** A metadata.yaml that cannot be used for a version; the message says what to fix. */
class ProviderMetadataError extends Failure {
  constructor(message: string) {
    super('fix-input', message);
    this.name = 'ProviderMetadataError';
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asInteger(value: unknown): number | undefined {
  if (typeof value === 'bigint') return Number(value);
  return typeof value === 'number' && Number.isInteger(value) ? value : undefined;
}

/** The release series of a metadata.yaml; `origin` names it in messages. */
export function parseReleaseSeries(text: string, origin: string): ReleaseSeries[] {
  let documents;
  try {
    documents = decodeYamlDocuments(text);
  } catch (error) {
    if (error instanceof YamlDecodeError)
      throw new ProviderMetadataError(`${origin}: is not valid YAML: ${error.message}`);
    throw error;
  }
  const value = documents[0]?.value;
  if (!isRecord(value) || !Array.isArray(value.releaseSeries))
    throw new ProviderMetadataError(
      `${origin}: has no releaseSeries; a provider's metadata.yaml lists {major, minor, contract} per release series (clusterctl's Metadata)`,
    );
  return value.releaseSeries.map((entry: unknown, index) => {
    const major = isRecord(entry) ? asInteger(entry.major) : undefined;
    const minor = isRecord(entry) ? asInteger(entry.minor) : undefined;
    const contract = isRecord(entry) ? entry.contract : undefined;
    if (major === undefined || minor === undefined || typeof contract !== 'string' || contract === '') {
      throw new ProviderMetadataError(
        `${origin}: releaseSeries[${index}] must have a whole-number major and minor and a contract such as v1beta1`,
      );
    }
    return { major, minor, contract };
  });
}

/** The contract of `version` (e.g. `v1.8.2`) according to its release series. */
export function contractOf(series: ReleaseSeries[], version: string, origin: string): string {
  const parsed = semver.parse(version);
  if (!parsed)
    throw new ProviderMetadataError(
      `${origin}: version ${JSON.stringify(version)} is not a semantic version such as v1.8.0`,
    );
  const found = series.find((entry) => entry.major === parsed.major && entry.minor === parsed.minor);
  if (!found) {
    const listed = series.map((entry) => `${entry.major}.${entry.minor}`).join(', ') || 'none';
    throw new ProviderMetadataError(
      `${origin}: has no releaseSeries entry for ${parsed.major}.${parsed.minor} (version ${version}); it lists ${listed}. The release is incomplete or the version is wrong`,
    );
  }
  return found.contract;
}
