#!/usr/bin/env bash
# Builds the real engines the tests run against (kube-apiserver, kube-controller-manager, etcd, Flux's
# source-controller and kustomize-controller, helm 3 and 4, sops) and downloads the CRDs we validate against
# (Cluster API, its Docker provider, cluster-api-operator, Argo CD, openMCP), all pinned in versions.json and
# taken from the Go module proxy only: no source tree of theirs is fetched or committed.
#
# Each lands in a per-machine cache keyed by name and version, so a machine builds each once:
#   ${CLUSTERSTACK_ENGINE_CACHE:-$HOME/.cache/clusterstack-gitops/engines}/<name>-<version>/
#     bin/<binary>  crds/<file>.yaml  engine.json (what was built, from which module, with which Go, how long)
# The Go module and build caches sit beside them (_go/), so a rebuild after a version bump is quick.
# An engine directory appears only when complete (built in a temp directory, then renamed), so an
# interrupted run leaves nothing half-built behind. Does nothing when everything is cached.
#
#   test/engines/build-engines.sh                    # every engine versions.json pins
#   test/engines/build-engines.sh etcd cluster-api   # only these (names as in versions.json)
#
# A program is built the way the go command builds any module's main package: in a throw-away
# module, generated here in a temp directory, whose go.mod is the engine's own (same requirements and
# replacements, so the same dependency graph as its release) plus a requirement on the engine itself.
# Replacements that point into the engine's own repository cannot be followed from the proxy: those
# are dropped (the requirement already names the version), and for k8s.io/kubernetes each staging
# module it requires as v0.0.0 is replaced with its published v0.X.Y, which is the same code. Where
# the proxy does not serve a version an engine requires, versions.json replaces it with the nearest
# served one and says why; the engine's engine.json records it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${CLUSTERSTACK_ENGINE_CACHE:-$HOME/.cache/clusterstack-gitops/engines}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
export GOMODCACHE=$cache/_go/mod GOCACHE=$cache/_go/build GOFLAGS=-buildvcs=false CGO_ENABLED=0
export GOPATH=$cache/_go/path
go=/usr/local/go/bin/go
[ -x "$go" ] || go=$(command -v go || true)
if [ -z "$go" ]; then
  echo "build-engines: Go is not installed (expected /usr/local/go/bin/go); the engines are built from the Go module proxy" >&2
  exit 3
fi
# The engines need Go 1.26 or newer (their go.mod files say so); older Go cannot fetch a newer toolchain.
go_minor=$(GOTOOLCHAIN=local "$go" env GOVERSION | sed -nE 's/^go1\.([0-9]+).*/\1/p')
if [ -z "$go_minor" ] || [ "$go_minor" -lt 26 ]; then
  echo "build-engines: $go is $(GOTOOLCHAIN=local "$go" env GOVERSION); the engines need Go 1.26 or newer (install it at /usr/local/go)" >&2
  exit 3
fi

# One line per engine: name, module, version, go toolchain, bin (name=dir,...), x (var=value,...),
# crds (dir,...), replace (module=version,...).
plan=$(node -e '
  const { engines } = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((name) => !engines.some((e) => e.name === name));
  if (unknown.length > 0) {
    console.error(`build-engines: no engine named ${unknown.join(", ")} in versions.json (known: ${engines.map((e) => e.name).join(", ")})`);
    process.exit(2);
  }
  for (const e of engines.filter((e) => wanted.length === 0 || wanted.includes(e.name))) {
    const pairs = (o) => Object.entries(o ?? {}).map(([k, v]) => `${k}=${v}`).join(",") || "-";
    console.log([e.name, e.module, e.version, e.go, pairs(e.bin), pairs(e.x), (e.crds ?? []).join(",") || "-", pairs(e.replace)].join("\t"));
  }' "$here/versions.json" "$@")

# The engine's go.mod as a throw-away module's: renamed, toolchain line dropped, in-repository
# replacements rewritten (staging modules) or dropped, the engine itself required, and the
# replacements versions.json names (module=version,...) added.
throwaway_go_mod() { # <engine go.mod> <module> <version> <staging version> [<replacements>]
  awk -v module="$2" -v version="$3" -v staging="$4" -v replacements="${5:--}" '
    FNR == NR { if ($2 == "v0.0.0") zero[$1] = 1; next }
    /^module / { print "module clusterstack.test/engine-build"; next }
    /^toolchain / { next }
    /=>[ \t]*\.\.?\// {
      name = ($1 == "replace") ? $2 : $1
      if (staging != "" && $0 ~ /=>[ \t]*\.\/staging\// && (name in zero)) {
        print (($1 == "replace") ? "replace " : "\t") name " => " name " " staging
      }
      next
    }
    { print }
    END {
      print ""; print "require " module " " version
      if (replacements != "-") {
        n = split(replacements, pairs, ",")
        for (i = 1; i <= n; i++) { split(pairs[i], pair, "="); print "replace " pair[1] " => " pair[1] " " pair[2] }
      }
    }
  ' "$1" "$1"
}

substitute() { # <template> <version> <client-go major> <client-go minor>
  local value=$1 plain=${2#v}
  value=${value//\{version\}/$2}
  value=${value//\{major\}/${plain%%.*}}
  local rest=${plain#*.}
  value=${value//\{minor\}/${rest%%.*}}
  value=${value//\{clientGoMajor\}/$3}
  value=${value//\{clientGoMinor\}/$4}
  printf '%s' "$value"
}

json_field() { node -e 'const v = JSON.parse(require("fs").readFileSync(0, "utf8"))[process.argv[1]]; if (v) console.log(v)' "$1"; }

failed=()
while IFS=$'\t' read -r name module version toolchain bins xs crds replacements; do
  target=$cache/$name-$version
  [ -f "$target/engine.json" ] && continue
  echo "build-engines: $name $version ($module) ..." >&2
  started=$(date +%s)
  work=$(mktemp -d "$cache/.build-$name-XXXXXX")
  # shellcheck disable=SC2064
  trap "chmod -R u+w '$work' 2>/dev/null; rm -rf '$work'" EXIT
  export GOTOOLCHAIN=$toolchain
  info=$(cd "$work" && "$go" mod download -json "$module@$version") || {
    echo "build-engines: the Go module proxy did not serve $module@$version:" >&2
    printf '%s\n' "$info" >&2
    failed+=("$name"); rm -rf "$work"; continue
  }
  source_dir=$(json_field Dir <<<"$info")
  engine_go_mod=$(json_field GoMod <<<"$info")
  mkdir -p "$work/out"
  ok=1
  crd_list=()
  if [ "$crds" != "-" ]; then
    mkdir -p "$work/out/crds"
    IFS=, read -ra crd_dirs <<<"$crds"
    for dir in "${crd_dirs[@]}"; do
      found=0
      for file in "$source_dir/$dir"/*.yaml; do
        [ -f "$file" ] || continue
        base=$(basename "$file")
        [ "$base" = kustomization.yaml ] && continue
        if [ -e "$work/out/crds/$base" ]; then echo "build-engines: $name: two CRD files named $base" >&2; ok=0; fi
        cp "$file" "$work/out/crds/$base"; chmod u+w "$work/out/crds/$base"
        crd_list+=("$dir/$base"); found=1
      done
      [ "$found" = 1 ] || { echo "build-engines: $name $version has no CRDs in $dir" >&2; ok=0; }
    done
  fi
  bin_list=()
  if [ "$ok" = 1 ] && [ "$bins" != "-" ]; then
    mkdir -p "$work/mod" "$work/out/bin"
    staging=""
    [ "$module" = k8s.io/kubernetes ] && staging="v0.${version#v1.}"
    throwaway_go_mod "$engine_go_mod" "$module" "$version" "$staging" "$replacements" >"$work/mod/go.mod"
    [ -f "$source_dir/go.sum" ] && cp "$source_dir/go.sum" "$work/mod/go.sum" && chmod u+w "$work/mod/go.sum"
    client_go=$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "$engine_go_mod")
    client_go=${client_go#v0.}
    ldflags="-s -w"
    if [ "$xs" != "-" ]; then
      IFS=, read -ra settings <<<"$xs"
      for setting in "${settings[@]}"; do
        ldflags+=" -X $(substitute "$setting" "$version" 1 "${client_go%%.*}")"
      done
    fi
    IFS=, read -ra bin_specs <<<"$bins"
    for spec in "${bin_specs[@]}"; do
      binary=${spec%%=*} dir=${spec#*=}
      package=$module
      [ "$dir" = . ] || package=$module/$dir
      if ! (cd "$work/mod" && "$go" build -mod=mod -trimpath -ldflags "$ldflags" -o "$work/out/bin/$binary" "$package"); then
        echo "build-engines: building $binary from $package@$version failed" >&2
        ok=0; break
      fi
      bin_list+=("$binary")
    done
  fi
  if [ "$ok" = 1 ]; then
    seconds=$(( $(date +%s) - started ))
    go_version=$(cd "$work" && "$go" env GOVERSION)
    node -e '
      const [name, module, version, goVersion, seconds, bins, crds, replacements] = process.argv.slice(1);
      const list = (s) => (s ? s.split("\n") : []);
      const replaced = Object.fromEntries(replacements === "-" ? [] : replacements.split(",").map((pair) => pair.split("=")));
      const manifest = { name, module, version, go: goVersion, binaries: list(bins), crds: list(crds), replaced, buildSeconds: Number(seconds) };
      require("fs").writeFileSync(process.argv[9], JSON.stringify(manifest, null, 2) + "\n");
    ' "$name" "$module" "$version" "$go_version" "$seconds" "$(printf '%s\n' "${bin_list[@]}" | sed '/^$/d')" \
      "$(printf '%s\n' "${crd_list[@]}" | sed '/^$/d')" "$replacements" "$work/out/engine.json"
    rm -rf "$target"
    mv "$work/out" "$target"
    echo "build-engines: $name $version ready in ${seconds}s: $target" >&2
  else
    failed+=("$name")
  fi
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
  trap - EXIT
done <<<"$plan"

if [ "${#failed[@]}" -gt 0 ]; then
  echo "build-engines: not built: ${failed[*]} (see the messages above; run it again to retry)" >&2
  exit 3
fi
