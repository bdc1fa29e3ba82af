# scalegate image for sharded swarm runs (docs/scale-out.md): the swarm
# pods of `scalegate k8s`, a CI matrix job, or the reference server itself
# (`scalegate serve --bind 0.0.0.0`).
#
#   docker build -t REGISTRY/scalegate:TAG .
#
# The ENet transport is cgo on the system libenet, so the build stage has
# libenet-dev and the runtime stage the matching libenet7 (both Debian
# bookworm). /bin/sh stays in the image: the k8s pods run a short script
# that prints the shard's report to the pod log after the run.
FROM golang:1.26-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libenet-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=1 go build -trimpath -o /out/scalegate ./cmd/scalegate

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libenet7 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --no-create-home scalegate
COPY --from=build /out/scalegate /usr/local/bin/scalegate
USER 10001
ENTRYPOINT ["scalegate"]
