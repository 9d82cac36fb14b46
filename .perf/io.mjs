import { readFileSync, readdirSync, linkSync, lstatSync, mkdirSync, rmSync, openSync, readSync, closeSync, fstatSync } from 'node:fs';
const root = process.argv[2];
const files = [];
const walk = (d) => { for (const e of readdirSync(`${root}/${d}`, { withFileTypes: true })) { const p = d ? `${d}/${e.name}` : e.name; if (e.isDirectory()) walk(p); else files.push(p); } };
let t = performance.now(); walk(''); console.log('list', files.length, (performance.now() - t).toFixed(0));
for (let r = 0; r < 2; r++) {
t = performance.now(); let n = 0; for (const f of files) n += readFileSync(`${root}/${f}`, 'utf8').length; console.log('readFileSync utf8', (performance.now() - t).toFixed(0), n);
t = performance.now(); n = 0; for (const f of files) n += readFileSync(`${root}/${f}`).length; console.log('readFileSync buf', (performance.now() - t).toFixed(0));
const buf = Buffer.allocUnsafe(1 << 20);
t = performance.now(); n = 0; for (const f of files) { const fd = openSync(`${root}/${f}`, 'r'); let k; let s=''; while ((k = readSync(fd, buf, 0, buf.length, null)) > 0) s += buf.toString('utf8', 0, k); closeSync(fd); n += s.length; } console.log('open/read/close', (performance.now() - t).toFixed(0));
t = performance.now(); for (const f of files) lstatSync(`${root}/${f}`); console.log('lstat', (performance.now() - t).toFixed(0));
}
const dest = '/tmp/perf/linktest'; rmSync(dest, { recursive: true, force: true });
t = performance.now(); const dirs = new Set(files.map((f) => f.slice(0, f.lastIndexOf('/')))); for (const d of dirs) mkdirSync(`${dest}/${d}`, { recursive: true }); console.log('mkdir', dirs.size, (performance.now() - t).toFixed(0));
t = performance.now(); for (const f of files) linkSync(`${root}/${f}`, `${dest}/${f}`); console.log('link', (performance.now() - t).toFixed(0));
t = performance.now(); rmSync(dest, { recursive: true, force: true }); console.log('rm', (performance.now() - t).toFixed(0));
