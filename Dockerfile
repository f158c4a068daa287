# syntax=docker/dockerfile:1
# The toolsvc image for people who have Docker (or podman, buildah).
#
#   docker build -t toolsvc:0.1.0 --build-arg VERSION=0.1.0 .
#
# It builds the same image as `make image`, which needs no Docker daemon and
# is what CI builds and tests (deploy/image): FROM scratch, the static binary
# at /usr/local/bin/toolsvc, the user nonroot (65532), CA certificates, the
# default configuration /etc/toolsvc/toolsvc.yaml and the data directory
# /var/lib/toolsvc. Keep the two in step (deploy/image/image.go). This file
# is not built in CI: no Docker daemon and no registry to pull golang from.

ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
ARG VERSION=0.1.0
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Static (modernc.org/sqlite is pure Go: no cgo needed), stamped with the
# version and, from .git when it is in the context, the commit.
RUN CGO_ENABLED=0 go build -buildvcs=auto -trimpath \
      -ldflags "-s -w -X github.com/toolsvc/toolsvc/internal/base/version.Version=${VERSION}" \
      -o /out/usr/local/bin/toolsvc ./cmd/toolsvc
RUN mkdir -p /out/etc/ssl/certs /out/etc/toolsvc/knowledge /out/tmp /out/var/lib/toolsvc \
 && cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/ \
 && printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/var/lib/toolsvc:/sbin/nologin\n' > /out/etc/passwd \
 && printf 'root:x:0:\nnonroot:x:65532:\n' > /out/etc/group \
 && printf '%s\n' \
      '# toolsvc in a container (the image'"'"'s defaults; docs/OPERATIONS.md).' \
      '# Flags and TOOLSVC_<FLAG> environment variables override each key, or' \
      '# mount another file here. Listening on every interface needs an auth file:' \
      '# set TOOLSVC_AUTH_FILE (or --auth-file) to a mounted file.' \
      'http-addr: 0.0.0.0:8080' \
      'grpc-addr: 0.0.0.0:9090' \
      'db: /var/lib/toolsvc/toolsvc.db' \
      'knowledge-dir: /etc/toolsvc/knowledge' > /out/etc/toolsvc/toolsvc.yaml \
 && chmod 1777 /out/tmp && chmod 700 /out/var/lib/toolsvc && chown 65532:65532 /out/var/lib/toolsvc

FROM scratch
ARG VERSION=0.1.0
COPY --from=build /out/ /
USER 65532:65532
WORKDIR /var/lib/toolsvc
ENV PATH=/usr/local/bin HOME=/var/lib/toolsvc TOOLSVC_CONFIG=/etc/toolsvc/toolsvc.yaml SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
EXPOSE 8080 9090
VOLUME /var/lib/toolsvc
LABEL org.opencontainers.image.title=toolsvc \
      org.opencontainers.image.version=${VERSION} \
      org.opencontainers.image.source=https://github.com/toolsvc/toolsvc
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/toolsvc"]
CMD ["serve"]
