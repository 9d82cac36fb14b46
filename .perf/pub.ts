import { DirectoryPublisher } from '/work/main/gitops/directory-publisher.ts';
const dir = process.argv[2]!;
for (let round = 0; round < 3; round++) {
  const p = new DirectoryPublisher(dir);
  let t = performance.now();
  const lock = await p.lock({ timeoutMs: 0, command: 'bench' });
  const prev = await p.readPrevious();
  console.log('readPrevious', (performance.now() - t).toFixed(0), prev.size);
  const tree = new Map(prev);
  const key = [...tree.keys()].find((k) => k.includes('cluster-0007'))!;
  tree.set(key, tree.get(key)! + `# round ${Date.now()}\n`);
  t = performance.now();
  await p.publish(tree);
  console.log('publish', (performance.now() - t).toFixed(0));
  await lock.release();
}
