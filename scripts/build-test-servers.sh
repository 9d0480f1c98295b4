#!/usr/bin/env bash
# Builds the servers the Kubernetes-datastore tests run against, from their own Go modules
# (as Kubernetes' envtest binaries are built): kube-apiserver and the etcd behind it; and
# wireguard-go, the userspace WireGuard the WireGuard tests use where the kernel has no
# wireguard module. The
# versions are pinned in one place, the go.mod/go.sum of test/tools/<name>/; each binary
# lands in build/test-servers/<name>-<version>/ once per machine (a version bump builds
# anew), linked from build/test-servers/bin/ for the tests. A failed build says which
# module failed and why (Go's own error), and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'build-test-servers: %s\n' "$*" >&2; }

# Go 1.24+ (Kubernetes 1.34's floor): the machine's Go at /usr/local/go, not Debian's golang-go
# (1.19, kept for the gob fixtures). Never a toolchain download: GOTOOLCHAIN=local.
go=/usr/local/go/bin/go
[[ -x $go ]] || go=$(command -v go || true)
if [[ -z $go ]]; then
  log "no Go toolchain (expected /usr/local/go/bin/go): cannot build kube-apiserver and etcd"
  exit 1
fi
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly
gover=$("$go" env GOVERSION)
if ! printf '%s\n' go1.24 "$gover" | sort -V -C; then
  log "$go is $gover; kube-apiserver needs go1.24 or later"
  exit 1
fi

# build <name> <module> <package> <binary>
build() {
  local name=$1 module=$2 pkg=$3 bin=$4 dir=test/tools/$1 version out
  version=$(awk -v m="$module" '$1 == "require" && $2 == m { print $3 } $1 == m { print $2 }' "$dir/go.mod" | head -1)
  if [[ -z $version ]]; then
    log "$dir/go.mod does not require $module"
    exit 1
  fi
  out=build/test-servers/$name-$version
  mkdir -p build/test-servers/bin
  ln -sfn "../$name-$version/$bin" "build/test-servers/bin/$bin"
  [[ -x $out/$bin ]] && return 0
  log "building $bin from $module@$version (once per machine; a few minutes)"
  mkdir -p "$out"
  local t0=$SECONDS err
  if ! err=$(cd "$dir" && "$go" build -trimpath -ldflags=-s -o "../../../$out/$bin.part" "$pkg" 2>&1); then
    log "building $bin from $module@$version failed:"
    printf '%s\n' "$err" | tail -30 >&2
    exit 1
  fi
  mv "$out/$bin.part" "$out/$bin"
  log "built $out/$bin in $((SECONDS - t0)) s"
}

build kube-apiserver k8s.io/kubernetes k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver
build etcd go.etcd.io/etcd/server/v3 go.etcd.io/etcd/server/v3 etcd
build wireguard-go golang.zx2c4.com/wireguard golang.zx2c4.com/wireguard wireguard-go
