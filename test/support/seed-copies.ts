// A seed several cases start from (a first render published into a repository, say), made once and
// copied for each case: rendering the same first publish again per case tests nothing new and costs
// its helm and git processes (13 helm runs for the quick start). Each case still gets a target of its
// own, so no case sees another's changes, in any order.
import { cp, mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const seeds = new Map<string, Promise<string>>();

/**
 * A fresh copy of what `make` leaves at the path it is given, at `<new temp dir>/<name>`; `make` runs
 * once per `key` in a worker (under the run's temporary directory, so that it outlives the file that made
 * it when files share a worker). A seed that failed is made again by the next caller.
 */
export async function copyOfSeed(key: string, name: string, make: (target: string) => Promise<void>): Promise<string> {
  let seed = seeds.get(key);
  if (seed === undefined) {
    seed = (async () => {
      const target = path.join(await mkdtemp(path.join(os.tmpdir(), 'csk-seed-')), name);
      await make(target);
      return target;
    })();
    seeds.set(key, seed);
    seed.catch(() => seeds.delete(key));
  }
  const copy = path.join(await mkdtemp(path.join(os.tmpdir(), 'csk-seeded-')), name);
  await cp(await seed, copy, { recursive: true, verbatimSymlinks: true });
  return copy;
}
