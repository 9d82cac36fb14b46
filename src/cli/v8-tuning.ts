// V8 settings for this process, set before anything else loads (main.ts imports this first).
import { setFlagsFromString } from 'node:v8';

// A render is a few seconds of CPU spread over many functions: with V8's default budget, the
// optimising compiler's threads spent about a third as much CPU as the JavaScript they compiled
// for. A budget three times larger optimises only what stays hot; measured on the heavy bench's
// full render (48 Clusters, helm replayed so that node's own CPU shows), interleaved, four runs
// each: user CPU 1,048-1,224 ms -> 996-1,108 ms.
setFlagsFromString('--interrupt-budget=200000');
