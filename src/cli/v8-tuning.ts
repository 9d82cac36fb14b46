// V8 settings for this process, set before anything else loads (main.ts imports this first).
import { setFlagsFromString } from 'node:v8';

// A render is a few seconds of CPU spread over many functions: with V8's default budget, the
// optimising compiler's threads spent about a third as much CPU as the JavaScript they compiled
// for. A budget three times larger optimises only what stays hot; measured on the heavy bench's
// full render (48 Clusters, helm replayed so that node's own CPU shows), interleaved, four runs
// each: user CPU 1,048-1,224 ms -> 996-1,108 ms. The flag is V8 11's (Node 20): V8 12 and later
// (Node 22, 24) tier up by other rules and do not know it, and would print "unrecognized flag" on
// every command's stderr.
if (v8Major(process.versions.v8) <= 11) setFlagsFromString('--interrupt-budget=200000');

/** The major version of a V8 version string such as `11.3.244.8-node.38`. */
function v8Major(version: string): number {
  return Number.parseInt(version, 10);
}
