# syntax=docker/dockerfile:1
# The binary is built by `make build`, as on a workstation: CGO_ENABLED=0, -trimpath, version and
# commit through -ldflags (make image passes them).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN make build VERSION=${VERSION} COMMIT=${COMMIT}

# Static, no shell, non-root (65532).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/bin/operator-sweeper /operator-sweeper
USER 65532:65532
ENTRYPOINT ["/operator-sweeper"]
