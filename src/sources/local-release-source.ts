// A directory with one sub-directory per release, named by its tag: the layout the
// cluster-stack-operator's local mode reads, and what an air-gapped copy holds.
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { treeDigest } from '../release/content-digest.js';
import {
  type FetchedRelease,
  listingFromTags,
  type ReleaseListing,
  type ReleaseSource,
  ReleaseSourceError,
} from '../release/release-source.js';
import { compareText } from '../core/compare-text.js';

export class LocalReleaseSource implements ReleaseSource {
  readonly location: string;

  constructor(private readonly root: string) {
    this.location = root;
  }

  async list(): Promise<ReleaseListing> {
    let entries;
    try {
      const stats = await stat(this.root);
      if (!stats.isDirectory())
        throw new ReleaseSourceError(
          'not-found',
          `release source ${this.root} is a file; give a directory with one sub-directory per release tag`,
        );
      entries = await readdir(this.root, { withFileTypes: true });
    } catch (error) {
      if (error instanceof ReleaseSourceError) throw error;
      throw new ReleaseSourceError(
        'not-found',
        `release source ${this.root} does not exist or cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); give a directory with one sub-directory per release tag, e.g. docker-ferrol-1-30-v1/`,
      );
    }
    const directories = entries.filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => e.name);
    return listingFromTags(directories.sort(compareText).map((tag) => ({ tag })));
  }

  async fetch(tag: string): Promise<FetchedRelease> {
    const dir = path.join(this.root, tag);
    try {
      if (!(await stat(dir)).isDirectory()) throw new Error('not a directory');
    } catch {
      throw new ReleaseSourceError('not-found', `release ${tag} is not in ${this.root}`);
    }
    return { tag, dir, digest: await treeDigest(dir) };
  }
}
