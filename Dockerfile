# The ipvs-proxier image: a static Go binary on Debian slim with the userland the daemon
# runs (kernel/linux.Tools: iptables for the nft and legacy flavours, kmod for
# modprobe) plus the tools operators use to check a node (ipvsadm, ipset, conntrack).
# `make image` builds it; cmd/ipvs-proxier/image_test.go keeps this file in step with
# linux.Tools and deploy/daemonset.yaml.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd ./cmd
COPY kernel ./kernel
COPY proxier ./proxier
COPY sync ./sync
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/ipvs-proxier ./cmd/ipvs-proxier

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends iptables kmod ipvsadm ipset conntrack \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ipvs-proxier /usr/local/bin/ipvs-proxier
ENTRYPOINT ["/usr/local/bin/ipvs-proxier"]
