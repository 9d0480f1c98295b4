// wireguard-go (userspace WireGuard over TUN, configured on its UAPI socket), for the
// WireGuard tests on kernels without the wireguard module; built by
// scripts/build-test-servers.sh into build/test-servers/.
module palisade.test/tools/wireguard-go

go 1.24

require golang.zx2c4.com/wireguard v0.0.0-20260522210424-ecfc5a8d5446

require (
	golang.org/x/crypto v0.37.0 // indirect
	golang.org/x/net v0.39.0 // indirect
	golang.org/x/sys v0.32.0 // indirect
	golang.zx2c4.com/wintun v0.0.0-20230126152724-0fa3db229ce2 // indirect
)
