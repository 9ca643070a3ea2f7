# The egress gateway: Debian's squid, a filtering forward proxy (no cache), run as 1000:1000.
FROM ca-sbx-base:debian
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends squid \
 && rm -rf /var/lib/apt/lists/* /etc/squid/conf.d
