#!/usr/bin/env bash
# Makes a fresh Debian 12 + Node 20 machine ready: installs the Debian packages and npm
# modules that are missing, then builds the native addon and the TypeScript. Cheap to
# re-run: every step skips what is already done.
#   --with-test-tools   also install what the test suite needs (valgrind; etcd-server,
#                       etcd-client and openssl for the etcd datastore tests;
#                       iputils-ping for the end-to-end traffic tests; clang-14 and
#                       libclang-rt-14-dev for the libFuzzer targets; clang-format-14 and
#                       clang-tidy-14 for the C++ lint; golang-go for
#                       Go's own encoding/gob, the Typha wire format's reference; golang-github-golang-snappy-dev,
#                       the snappy package Typha itself uses, for the compressed stream;
#                       kubectl (Debian's kubernetes-client) unless one is installed;
#                       the Node LTS from the npm registry, with the addon built for it,
#                       for the suite's second run: scripts/fetch-lts-node.mjs; and the
#                       kube-apiserver and etcd the Kubernetes-datastore tests run against,
#                       and wireguard-go for the WireGuard tests,
#                       built from their Go modules with the machine's Go (/usr/local/go):
#                       scripts/build-test-servers.sh, versions pinned in test/tools/;
#                       qemu-system-x86 and, where /boot has none with WireGuard, Debian's
#                       kernel (linux-image-amd64), which the kernel-WireGuard tests boot in
#                       a VM of their own (test/helpers/vm.ts); wireguard-tools and tcpdump
#                       for the WireGuard bench and the encryption capture; ipvsadm for the
#                       kube-proxy IPVS lab, which runs in the same VM)
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'setup: %s\n' "$*" >&2; }

node_major=$(node -p 'process.versions.node.split(".")[0]')
if (( node_major < 20 )); then
  log "Node >= 20 is required (found $(node --version))"
  exit 1
fi

# Build: compiler, node-gyp's python, OpenSSL for SHA-224 (selector UIDs), libnftnl and
# libmnl for the native nftables backend, libiptc for native iptables-legacy. Run: iproute2, nftables, iptables, ipset;
# bird (BIRD 1.6, the syntax Calico's own BIRD speaks) for `palisade bgp`.
pkgs=(g++ make python3 pkg-config libssl-dev libnftnl-dev libmnl-dev libiptc-dev iproute2 nftables iptables ipset bird)
if [[ ${1:-} == --with-test-tools ]]; then
  pkgs+=(valgrind etcd-server etcd-client openssl iputils-ping clang-14 libclang-rt-14-dev clang-format-14 clang-tidy-14 golang-go golang-github-golang-snappy-dev)
  # kubectl checks the tests' Kubernetes API server; Debian's client where none is installed.
  command -v kubectl >/dev/null || pkgs+=(kubernetes-client)
  # The kernel-WireGuard tests boot a Debian kernel under qemu (this machine's kernel may
  # have no WireGuard module): any installed one with the module will do.
  pkgs+=(qemu-system-x86 wireguard-tools tcpdump ipvsadm)
  ls /lib/modules/*/kernel/drivers/net/wireguard >/dev/null 2>&1 && ls /boot/vmlinuz-* >/dev/null 2>&1 ||
    pkgs+=(linux-image-amd64)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if (( ${#missing[@]} )); then
  sudo=()
  if (( $(id -u) != 0 )); then
    if command -v sudo >/dev/null; then sudo=(sudo); else
      log "need root (or sudo) to install: ${missing[*]}"
      exit 1
    fi
  fi
  log "installing Debian packages: ${missing[*]}"
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian's bird package enables a host-wide BIRD service: palisade bgp runs its own BIRD
  # (with its own socket), and nothing of ours may run in the host's network namespace.
  if [[ " ${missing[*]} " == *" bird "* && -d /run/systemd/system ]]; then
    "${sudo[@]}" systemctl disable --now bird.service bird6.service >/dev/null 2>&1 || true
  fi
fi

if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  log "installing npm modules (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

log "building the native addon"
node scripts/build-native.mjs >/dev/null
log "compiling TypeScript"
npx --no-install tsc -p .
if [[ ${1:-} == --with-test-tools ]]; then
  log "the Node LTS for the second test run"
  node scripts/fetch-lts-node.mjs
  log "kube-apiserver and etcd for the Kubernetes-datastore tests, wireguard-go for the WireGuard tests"
  bash scripts/build-test-servers.sh
fi
