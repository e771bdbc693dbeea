# syntax=docker/dockerfile:1
#
# fleetcache's aggregator as a static binary on distroless, running as the
# non-root user 65532:
#   docker build -t fleetcache:dev .
# deploy/deploy_test.go builds cmd/aggregator with the flags of the go build
# line below and checks that the result is statically linked.

# GraphiQL's bundle (make ui does the same): the npm packages pinned in
# package-lock.json, bundled by esbuild into internal/graphiql/dist.
FROM node:22-bookworm-slim AS ui
WORKDIR /src/internal/graphiql/ui
COPY internal/graphiql/ui/package.json internal/graphiql/ui/package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm ci --no-audit --no-fund
COPY internal/graphiql/ui/ ./
RUN node build.mjs

FROM golang:1.26 AS build
WORKDIR /src
# Modules first: a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
COPY --from=ui /src/internal/graphiql/dist/ internal/graphiql/dist/
# CGO off: no libc, so the binary runs on an image without one.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/aggregator ./cmd/aggregator

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/aggregator /usr/local/bin/aggregator
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/aggregator"]
