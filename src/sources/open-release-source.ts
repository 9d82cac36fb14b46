// Turns a source string (a directory, `github:owner/repo`, `oci://registry/repo`) into a ReleaseSource.
import { InputError } from '../core/problem.js';
import type { ReleaseSource } from '../release/release-source.js';
import { LocalReleaseSource } from './local-release-source.js';

export interface SourceOptions {
  /** Where downloaded releases are cached. */
  cacheDir: string;
}

/** Opens a release source; the same string always yields the same (shared) source object. */
export type SourceOpener = (location: string) => ReleaseSource;

export function createSourceOpener(_options: SourceOptions): SourceOpener {
  const opened = new Map<string, ReleaseSource>();
  return (location) => {
    const existing = opened.get(location);
    if (existing) return existing;
    let source: ReleaseSource;
    if (location.startsWith('github:') || location.startsWith('oci://')) {
      throw new InputError([{ message: `release source ${location}: remote sources are not available in this build; use a local directory` }]);
    } else {
      source = new LocalReleaseSource(location);
    }
    opened.set(location, source);
    return source;
  };
}
