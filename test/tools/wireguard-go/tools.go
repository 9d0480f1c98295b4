//go:build tools

// wireguard-go, the userspace WireGuard the WireGuard tests run where the kernel has no
// wireguard module: real WireGuard (Noise IK, ChaCha20-Poly1305) over a TUN device,
// configured over its UAPI socket. Pinned here; built by scripts/build-test-servers.sh.
package tools

import _ "golang.zx2c4.com/wireguard"
