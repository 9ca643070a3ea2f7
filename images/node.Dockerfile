# Local stand-in for node:22-bookworm-slim (Debian's nodejs and npm).
FROM ca-sbx-base:git
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm \
 && rm -rf /var/lib/apt/lists/*
