# The agentruntime image: one static binary on distroless, as a non-root
# user, for `agentruntime serve <service>` (deploy/k8s) and `agentruntime dev`.
#
#   docker build --build-arg VERSION=v0.1.0 -t ghcr.io/agentruntime/agentruntime:v0.1.0 .
#   docker buildx build --platform linux/amd64,linux/arm64 ...
#
# Base images are pinned by tag; release automation may pin them further by
# digest. tilt/Dockerfile is the development variant (live update).

# The Go of go.mod's `go` line, so the build never fetches a toolchain. It
# runs on the build machine's platform and cross-compiles: no emulation for
# multi-platform builds.
FROM --platform=$BUILDPLATFORM golang:1.26.8 AS build
WORKDIR /src

# Modules first: this layer stays cached until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download

COPY . .
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
# Static (no cgo), reproducible paths (-trimpath), no symbol tables (-s -w),
# the version stamped into `agentruntime version` and the runtime events.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/agentruntime ./cmd/agentruntime

# No shell, no package manager: CA certificates, tzdata and a nonroot user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/agentruntime /agentruntime
# distroless's nonroot user, numeric so that Kubernetes can verify
# runAsNonRoot without a runAsUser.
USER 65532:65532
# gRPC: the services, health and reflection.
EXPOSE 7070
ENTRYPOINT ["/agentruntime"]
