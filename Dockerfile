# syntax=docker/dockerfile:1
#
# fleetcache's aggregator as a static binary on distroless, running as the
# non-root user 65532:
#   docker build -t fleetcache:dev .
# deploy/deploy_test.go builds cmd/aggregator with the flags of the go build
# line below and checks that the result is statically linked.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first: a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# CGO off: no libc, so the binary runs on an image without one.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/aggregator ./cmd/aggregator

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/aggregator /usr/local/bin/aggregator
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/aggregator"]
