# Local stand-in for golang:1.27-bookworm (the official image is a full one: gcc for cgo).
# bookworm's own golang is 1.19, so the current Go comes from trixie-backports (statically linked,
# it runs on bookworm; apt takes nothing else from there: the source is pinned to this package).
FROM ca-sbx-base:git
RUN set -eu; \
    mirror=$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list); \
    echo "deb $mirror trixie-backports main" > /etc/apt/sources.list.d/trixie-backports.list; \
    printf 'Package: *\nPin: release n=trixie-backports\nPin-Priority: 1\n\nPackage: golang-1.27-go golang-1.27-src\nPin: release n=trixie-backports\nPin-Priority: 500\n' \
      > /etc/apt/preferences.d/ca-sbx-go; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      golang-1.27-go gcc g++ libc6-dev make pkg-config; \
    rm -rf /var/lib/apt/lists/*; \
    ln -s /usr/lib/go-1.27/bin/go /usr/local/bin/go; ln -s /usr/lib/go-1.27/bin/gofmt /usr/local/bin/gofmt; \
    go version
