#!/usr/bin/env bash
# The Dockerfile's build stage, step by step (the Dockerfile runs exactly these; a test
# runs them on a plain Debian 12 machine with the Node LTS, as there is no Docker engine there).
#   deps    the Debian packages the addon needs to compile
#   build   the native addon, the TypeScript, then drop the dev dependencies
set -euo pipefail

case "${1:-}" in
  deps)
    pkgs=(g++ make python3 pkg-config libssl-dev libnftnl-dev libmnl-dev libiptc-dev)
    missing=()
    for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p"); done
    if (( ${#missing[@]} )); then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
      rm -rf /var/lib/apt/lists/*
    fi
    ;;
  build)
    node scripts/build-native.mjs
    npx --no-install tsc -p .
    # The runtime needs dist/src, bin, the addon and the production modules only.
    rm -rf dist/test dist/bench
    npm prune --omit=dev --no-audit --no-fund
    # Biome's binary is an optional dependency (scripts/biome.mjs): a build tool, not the agent's.
    rm -rf node_modules/@biomejs
    # Nothing at run time reads type declarations, source maps, TypeScript sources or
    # docs: about half of the production modules' bytes (@kubernetes/client-node's most).
    find node_modules dist -type f \( -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.map' -o -name '*.md' \) -delete
    ;;
  *)
    echo "usage: $0 deps|build" >&2
    exit 2
    ;;
esac
