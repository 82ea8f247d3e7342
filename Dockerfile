# The ipvs-proxier image: a static Go binary on Debian slim with the userland the daemon
# runs (kernel/linux.Tools: iptables for the nft and legacy flavours, kmod for
# modprobe) plus the tools operators use to check a node (ipvsadm, ipset, conntrack).
# `make image` builds it with an engine; `make image-oci` builds the same contents without
# one (e2e/image: the packages below, read from this file, on a Debian rootfs made by
# mmdebstrap, the same binary and the same iptables wrapper). cmd/ipvs-proxier/image_test.go
# keeps this file in step with linux.Tools and deploy/base/daemonset.yaml.

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
# The plain iptables names pick the node's flavour (nft or legacy) at their first call, as
# kube-proxy's image does; the daemon itself calls the flavoured binaries.
COPY e2e/image/iptables-wrapper /usr/sbin/iptables-wrapper
RUN for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do \
      ln -sf iptables-wrapper /usr/sbin/$t; done
ENTRYPOINT ["/usr/local/bin/ipvs-proxier"]
