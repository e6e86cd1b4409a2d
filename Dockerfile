# syntax=docker/dockerfile:1
# The image for those with a container engine: `make image-docker`. `make image` assembles the same
# image without one (hack/image, on an empty base): the same paths (/operator-sweeper, the CA
# bundle at /etc/ssl/certs/ca-certificates.crt, /etc/passwd and /etc/group with root and nonroot,
# /home/nonroot, /tmp), user, entrypoint and labels as here, where distroless static-debian12:nonroot
# provides all but the binary. test/e2e/image_test.go checks that USER, ENTRYPOINT, the COPY
# destination and the LABEL keys below match what hack/image builds.
#
# The binary is built by `make build`, as on a workstation: CGO_ENABLED=0, -trimpath, version and
# commit through -ldflags (make image-docker passes them).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN make build VERSION=${VERSION} COMMIT=${COMMIT}

# Static, no shell, non-root (65532): distroless' nonroot, with its WORKDIR /home/nonroot and its
# SSL_CERT_FILE, as hack/image sets them.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="operator-sweeper" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.source="https://github.com/operator-sweeper/operator-sweeper"
COPY --from=build /src/bin/operator-sweeper /operator-sweeper
USER 65532:65532
ENTRYPOINT ["/operator-sweeper"]
