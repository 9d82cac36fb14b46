#!/usr/bin/env bash
# Runs the test suite on another Node.js line: test/run-on-node.sh <major> [vitest arguments...]
#   test/run-on-node.sh 22                          the whole suite on Node 22
#   test/run-on-node.sh 24 test/remote-fetch.test.ts  one file on Node 24
# The Node build comes from the npm registry's `node` package (npx caches it per version), so
# nothing but npm is needed. That node is first on PATH for vitest and for every process the tests
# start (the CLI, the controller, tsx). Run `npm ci` (on any supported line) first.
set -euo pipefail
major="${1:?usage: test/run-on-node.sh <major: 22, 24, ...> [vitest arguments...]}"
shift
[[ "$major" =~ ^[0-9]+$ ]] || { echo "run-on-node.sh: the Node line must be a major version such as 22, not '$major'" >&2; exit 2; }
cd "$(dirname "$0")/.."
[[ -f node_modules/vitest/vitest.mjs ]] || { echo "run-on-node.sh: no node_modules/vitest; run npm ci first" >&2; exit 1; }
exec npx --yes --package "node@${major}" -- sh -c 'echo "Node $(node --version) at $(command -v node)" >&2 && exec node node_modules/vitest/vitest.mjs run "$@"' run-on-node "$@"
