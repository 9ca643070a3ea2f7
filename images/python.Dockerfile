# Local stand-in for python:3.12-slim-bookworm (Debian's python3 and pip).
FROM ca-sbx-base:git
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-pip python3-venv \
 && rm -rf /var/lib/apt/lists/*
