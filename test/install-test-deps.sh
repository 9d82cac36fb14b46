#!/usr/bin/env bash
# Installs the Debian packages the tests run for real: an OCI registry (docker-registry), skopeo to
# read artifacts back, Lua for the Argo CD health checks, git (git http-backend ships with it) and
# kubectl for kustomize builds, htpasswd (apache2-utils) and openssl for the registries with auth, age
# to unwrap the data keys of the SOPS files we write, and
# Go with Debian's sigs.k8s.io/yaml and go-yaml v2 sources: the tests build a small oracle from them
# to check that what we write decodes in Kubernetes exactly as helm's output does.
# Then builds the real engines (kube-apiserver, etcd, Flux, helm 3 and 4, sops) and downloads the CRDs the
# tests validate against, from the Go module proxy into a per-machine cache (test/engines/build-engines.sh;
# the first build takes long, see docs/development.md).
# Needs root (or sudo) for the packages; does nothing when everything is installed and built.
set -euo pipefail
packages=(docker-registry skopeo lua5.4 git apache2-utils openssl age golang-go golang-k8s-sigs-yaml-dev golang-gopkg-yaml.v2-dev)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
# kubectl (its built-in kustomize builds the generated wiring in tests); Debian's package is a fallback.
command -v kubectl >/dev/null 2>&1 || missing+=(kubernetes-client)
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # The package starts a registry on :5000 where systemd runs; the tests start their own on 127.0.0.1.
  if command -v systemctl >/dev/null 2>&1; then $sudo systemctl disable --now docker-registry >/dev/null 2>&1 || true; fi
fi
"$(dirname "$0")/engines/build-engines.sh"
