# Flotilla's image: every binary (flotilla-worker, flotilla, flotilla-agent, flotilla-controller), static, at the root of an
# empty base (the agent's Deployment runs /flotilla-agent), run as an unprivileged user. Build it with
# `docker build -t flotilla .` (docker-compose.yml does).
ARG GO_IMAGE=golang:1.26-bookworm

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 GOFLAGS=-buildvcs=false make build VERSION=${VERSION} GO_LDFLAGS_EXTRA="-s -w" && \
    mkdir -p /rootfs/etc /rootfs/var/cache/flotilla /rootfs/tmp && \
    cp bin/flotilla-worker bin/flotilla bin/flotilla-agent bin/flotilla-controller /rootfs/ && \
    cp /etc/ssl/certs/ca-certificates.crt /rootfs/ca-certificates.crt

FROM scratch
COPY hack/images/flotilla/passwd hack/images/flotilla/group /etc/
COPY --from=build /rootfs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /rootfs/flotilla-worker /rootfs/flotilla /rootfs/flotilla-agent /rootfs/flotilla-controller /
COPY --from=build --chown=65532:65532 /rootfs/var/cache/flotilla /var/cache/flotilla
COPY --from=build --chown=65532:65532 /rootfs/tmp /tmp
ENV PATH=/ HOME=/var/cache/flotilla FLOTILLA_CACHE_DIR=/var/cache/flotilla
USER 65532:65532
EXPOSE 8090 9090
CMD ["flotilla-worker"]
