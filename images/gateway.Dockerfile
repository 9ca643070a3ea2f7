# The egress gateway: Debian's squid built with OpenSSL (a filtering forward proxy, no cache), run
# as 1000:1000. OpenSSL and the CA store for --credential: the gateway makes a per-sandbox CA and
# terminates the box's TLS to the credential domains only, then connects on over verified TLS.
FROM ca-sbx-base:debian
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends squid-openssl openssl ca-certificates \
 && rm -rf /var/lib/apt/lists/* /etc/squid/conf.d
