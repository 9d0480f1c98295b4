# palisade: a Calico-Felix-compatible node agent. Two stages: the build stage compiles the
# native addon (libnftnl, libmnl, libiptc) and the TypeScript; the runtime stage is Debian slim with
# the Node LTS (24; package.json's palisade.ltsNode is the version the suite runs on), the
# netfilter tools for operators (nft, iptables, ipset, ip), BIRD, and the built app: the
# production modules without their type declarations, source maps and docs.
# No network access at run time. Build: docker build -t palisade:0.1.0 .

FROM node:24-bookworm AS build
WORKDIR /src
COPY scripts/docker-build.sh scripts/docker-build.sh
RUN bash scripts/docker-build.sh deps
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY binding.gyp tsconfig.json ./
COPY native native
COPY scripts scripts
COPY src src
COPY bin bin
COPY examples examples
RUN bash scripts/docker-build.sh build

FROM node:24-bookworm-slim AS runtime
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libnftnl11 libmnl0 libip4tc2 libip6tc2 libssl3 nftables iptables ipset iproute2 bird \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules node_modules
COPY --from=build /src/bin bin
COPY --from=build /src/dist dist
COPY --from=build /src/build/Release/palisade.node build/Release/palisade.node
COPY --from=build /src/binding.gyp ./
COPY --from=build /src/examples examples
# The agent programs netfilter and routes (CAP_NET_ADMIN, CAP_NET_RAW) and writes the
# per-interface settings under /proc/sys/net, which only root may write: it runs as root,
# with only those capabilities (see deploy/daemonset.yaml).
ENV NODE_ENV=production
ENTRYPOINT ["/app/bin/palisade-entrypoint.sh"]
CMD ["agent"]
