# Local stand-in for python:3.11-bookworm, the FULL official image (not -slim): gcc and the Python
# headers are there so sdists with C extensions build during the install. Debian's python3 (3.11),
# pip and venv. uv is neither in Debian bookworm nor on this machine's package index: the uv
# recipe of @ca-sandbox/build installs uv from the configured index when it can, else reads uv.lock
# itself and installs the same pins with pip.
FROM ca-sbx-base:git
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-pip python3-venv python3-dev python-is-python3 gcc g++ make \
 && rm -rf /var/lib/apt/lists/*
