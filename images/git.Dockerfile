# The helper image: git for clones inside a container (never on the host), tar for manifests.
FROM ca-sbx-base:debian
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends git openssh-client \
 && rm -rf /var/lib/apt/lists/*
