#!/usr/bin/env bash
# Rebuilds the release artifacts under releases/ from chart-sources/, byte for byte reproducibly.
#
#   examples/quickstart/build-releases.sh            # rebuild releases/docker-ferrol-1-30-v{1,2,3}
#   OUT=/tmp/rel examples/quickstart/build-releases.sh   # build somewhere else
#   HELM=/usr/local/bin/helm examples/quickstart/build-releases.sh
#
# Every chart is checked with `helm lint`, `helm package` and `helm template`, but the archives are
# written with GNU tar (sorted entries, mtime 0, owner 0:0, fixed modes) and `gzip -n`: helm
# package stamps the current time into its archives and unpacks vendored .tgz subcharts, while
# these files are meant to be committed and to stay identical across rebuilds.
#
# Sourcing this file with BUILD_RELEASES_LIB_ONLY=1 defines the functions without building
# (test/fixtures/build-releases.sh does that).
set -euo pipefail
export LC_ALL=C

QUICKSTART_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CHART_SOURCES=$QUICKSTART_DIR/chart-sources
REPO_ROOT=$(cd "$QUICKSTART_DIR/../.." && pwd)

STACK_PREFIX=docker-ferrol-1-30          # <provider>-<name>-<k8s major>-<k8s minor>
CLASS_CHART=$STACK_PREFIX-cluster-class
ADDON_CHART=$STACK_PREFIX-cluster-addon

if [[ -z "${HELM:-}" ]]; then
  if [[ -x "$REPO_ROOT/node_modules/.bin/helm" ]]; then HELM=$REPO_ROOT/node_modules/.bin/helm
  else HELM=$(command -v helm || true)
  fi
fi
[[ -n "$HELM" && -x "$HELM" ]] || { echo "build-releases: helm not found (set HELM=/path/to/helm)" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/build-releases.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# Keep helm away from the user's repositories, plugins and cache.
export HELM_CACHE_HOME=$WORK/helm/cache HELM_CONFIG_HOME=$WORK/helm/config HELM_DATA_HOME=$WORK/helm/data

log() { echo "build-releases: $*" >&2; }

# det_tgz <dir> <out.tgz> <entry>...: reproducible tar.gz of the entries (relative to <dir>).
det_tgz() {
  local dir=$1 out=$2; shift 2
  tar -C "$dir" --sort=name --format=ustar --mtime=@0 --owner=0 --group=0 --numeric-owner \
    --mode='u=rwX,go=rX' -cf - "$@" | gzip -n -9 > "$out"
}

# check_chart <chart dir> <kube version>: lint, package (to a scratch dir) and template it.
check_chart() {
  local chart=$1 kube=$2
  "$HELM" lint "$chart" --quiet >/dev/null || { "$HELM" lint "$chart" >&2; return 1; }
  "$HELM" package "$chart" --destination "$WORK/helm-package" >/dev/null
  "$HELM" template check "$chart" --kube-version "$kube" >/dev/null
}

# build_class_chart <stack version, dot form> <values.yaml> <kube version> <release dir> <tgz|dir>
build_class_chart() {
  local version=$1 values=$2 kube=$3 out=$4 form=$5
  local stage=$WORK/class-$version
  rm -rf "$stage"; mkdir -p "$stage"
  cp -R "$CHART_SOURCES/cluster-class" "$stage/$CLASS_CHART"
  sed -i "s/^version: .*/version: $version/" "$stage/$CLASS_CHART/Chart.yaml"
  cp "$values" "$stage/$CLASS_CHART/values.yaml"
  check_chart "$stage/$CLASS_CHART" "$kube"
  # Escaped braces ({{ "{{" }} ... {{ "}}" }}) must survive rendering for the bootstrap provider.
  "$HELM" template "$STACK_PREFIX" "$stage/$CLASS_CHART" --namespace cluster-stacks --kube-version "$kube" \
    | grep -q "name: $STACK_PREFIX-$version\$" || { log "ClusterClass $STACK_PREFIX-$version not rendered"; return 1; }
  "$HELM" template "$STACK_PREFIX" "$stage/$CLASS_CHART" --namespace cluster-stacks --kube-version "$kube" \
    | grep -qF '{{ ds.meta_data.hostname }}' || { log "escaped braces lost in $CLASS_CHART $version"; return 1; }
  case $form in
    tgz) det_tgz "$stage" "$out/$CLASS_CHART-$version.tgz" "$CLASS_CHART" ;;
    dir) cp -R "$stage/$CLASS_CHART" "$out/$CLASS_CHART-$version"
         chmod -R u=rwX,go=rX "$out/$CLASS_CHART-$version" ;;
    *) log "unknown form $form"; return 1 ;;
  esac
}

# build_legacy_addon <addon version> <kube version> <release dir>: umbrella chart with cni vendored
# as a directory and metrics-server vendored as a packaged .tgz, plus cluster-addon-values.yaml.
build_legacy_addon() {
  local version=$1 kube=$2 out=$3
  local stage=$WORK/addon-legacy-$version
  rm -rf "$stage"; mkdir -p "$stage"
  cp -R "$CHART_SOURCES/cluster-addon-v1/chart" "$stage/$ADDON_CHART"
  sed -i "s/^version: .*/version: $version/" "$stage/$ADDON_CHART/Chart.yaml"
  mkdir -p "$stage/$ADDON_CHART/charts"
  cp -R "$CHART_SOURCES/addons/cni" "$stage/$ADDON_CHART/charts/cni"
  check_chart "$CHART_SOURCES/addons/metrics-server" "$kube"
  det_tgz "$CHART_SOURCES/addons" "$stage/$ADDON_CHART/charts/metrics-server-0.1.0.tgz" metrics-server
  check_chart "$stage/$ADDON_CHART" "$kube"
  det_tgz "$stage" "$out/$ADDON_CHART-$version.tgz" "$ADDON_CHART"
  cp "$CHART_SOURCES/cluster-addon-v1/cluster-addon-values.yaml" "$out/cluster-addon-values.yaml"
}

# build_multistage_addon <addon version> <kube version> <release dir>: a tar.gz whose top-level
# folders are the stage charts (cni/, metrics-server/), each with its overwrite.yaml, exactly as
# csctl packs cluster-addon/ (entries relative to it, directories included), plus clusteraddon.yaml.
build_multistage_addon() {
  local version=$1 kube=$2 out=$3
  local stage=$WORK/addon-stages-$version stages=(cni metrics-server) s
  rm -rf "$stage"; mkdir -p "$stage"
  for s in "${stages[@]}"; do
    cp -R "$CHART_SOURCES/addons/$s" "$stage/$s"
    cp "$CHART_SOURCES/cluster-addon-v2/overwrite/$s.yaml" "$stage/$s/overwrite.yaml"
    check_chart "$stage/$s" "$kube"
  done
  det_tgz "$stage" "$out/$ADDON_CHART-$version.tgz" "${stages[@]}"
  cp "$CHART_SOURCES/cluster-addon-v2/clusteraddon.yaml" "$out/clusteraddon.yaml"
}

# write_metadata <release dir> <stack version> <kubernetes> <clusterAddon> <nodeImage>
write_metadata() {
  cat > "$1/metadata.yaml" <<META
apiVersion: metadata.clusterstack.x-k8s.io/v1alpha1
versions:
  clusterStack: $2
  kubernetes: $3
  components:
    clusterAddon: $4
    nodeImage: $5
META
}

# new_release_dir <releases dir> <tag>: an empty directory for the release.
new_release_dir() {
  rm -rf "${1:?}/${2:?}"; mkdir -p "$1/$2"; echo "$1/$2"
}

build_quickstart() {
  local out=${OUT:-$QUICKSTART_DIR/releases} dir
  mkdir -p "$out"

  # v1: legacy addon (one umbrella chart + cluster-addon-values.yaml).
  dir=$(new_release_dir "$out" $STACK_PREFIX-v1)
  write_metadata "$dir" v1 v1.30.2 v1 v1
  build_class_chart v1 "$CHART_SOURCES/cluster-class-values/v1.yaml" v1.30.2 "$dir" tgz
  build_legacy_addon v1 v1.30.2 "$dir"

  # v2: multi-stage addon v2; the cluster-class chart ships as an unpacked chart directory.
  dir=$(new_release_dir "$out" $STACK_PREFIX-v2)
  write_metadata "$dir" v2 v1.30.4 v2 v1
  build_class_chart v2 "$CHART_SOURCES/cluster-class-values/v2.yaml" v1.30.4 "$dir" dir
  build_multistage_addon v2 v1.30.4 "$dir"

  # v3: new cluster class, same addon v2 (identical archive and clusteraddon.yaml) and Kubernetes
  # patch as v2, so clusters moving from v2 to v3 keep byte-identical addons.
  dir=$(new_release_dir "$out" $STACK_PREFIX-v3)
  write_metadata "$dir" v3 v1.30.4 v2 v1
  build_class_chart v3 "$CHART_SOURCES/cluster-class-values/v3.yaml" v1.30.4 "$dir" tgz
  build_multistage_addon v2 v1.30.4 "$dir"

  log "built $(cd "$out" && echo $STACK_PREFIX-v[123]) in $out"
}

if [[ "${BUILD_RELEASES_LIB_ONLY:-}" != 1 ]]; then
  build_quickstart
fi
