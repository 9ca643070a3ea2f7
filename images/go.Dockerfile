# Local stand-in for golang:1.23-bookworm (Debian's golang-go).
FROM ca-sbx-base:git
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends golang-go \
 && rm -rf /var/lib/apt/lists/*
