# Local stand-in for debian:bookworm-slim: the debootstrap minbase plus the sandbox user (1000:1000)
# and /work/repo owned by it, so a fresh volume mounted there is writable by the box.
FROM ca-sbx-base:bookworm-minbase
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends procps ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd -g 1000 sandbox && useradd -u 1000 -g 1000 -m -s /bin/bash sandbox \
 && mkdir -p /work/repo /deps && chown 1000:1000 /work/repo
CMD ["bash"]
