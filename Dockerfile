# syntax=docker/dockerfile:1
# Builds the same static binary as `make build`: CGO_ENABLED=0, -trimpath, version via -ldflags.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/operator-sweeper ./cmd/operator-sweeper

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/operator-sweeper /operator-sweeper
USER 65532:65532
ENTRYPOINT ["/operator-sweeper"]
