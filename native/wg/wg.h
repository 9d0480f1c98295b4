// The kernel's WireGuard devices over generic netlink (the "wireguard" family, as `wg`
// and wgctrl speak it): read a device and its peers, and change it in one call. A change
// arrives as a byte stream from JavaScript; it is split into as many SET_DEVICE messages
// as its size needs, as the kernel documents (the device's flags only in the first, a
// peer's allowed IPs continued under its key). Plain C++; runs on a worker thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace palisade::wg {

constexpr size_t kKeyLen = 32;

// Change stream (little-endian):
//   u8 flags (1 replace peers, 2 private key, 4 listen port, 8 fwmark), 32 bytes private
//   key, u16 listen port, u32 fwmark, u32 peer count; then per peer:
//   32 bytes public key, u8 flags (1 remove, 2 replace allowed IPs, 4 update only,
//   8 endpoint, 16 keepalive), u8 endpoint family (4|6), 16 bytes endpoint address,
//   u16 endpoint port, u16 keepalive seconds, u32 allowed-IP count; then per allowed IP:
//   u8 family (4|6), 16 bytes address, u8 prefix length.
enum DeviceFlags : uint8_t { kReplacePeers = 1, kSetPrivateKey = 2, kSetListenPort = 4, kSetFwmark = 8 };
enum PeerFlags : uint8_t { kRemove = 1, kReplaceAllowed = 2, kUpdateOnly = 4, kSetEndpoint = 8, kSetKeepalive = 16 };
constexpr size_t kChangeHeader = 1 + kKeyLen + 2 + 4 + 4;
constexpr size_t kPeerHeader = kKeyLen + 1 + 1 + 16 + 2 + 2 + 4;
constexpr size_t kAllowedSize = 1 + 16 + 1;

struct AllowedIp {
  uint8_t family;  // 4 or 6
  uint8_t addr[16];
  uint8_t prefix;
};

struct PeerChange {
  uint8_t key[kKeyLen];
  uint8_t flags;
  uint8_t endpointFamily;
  uint8_t endpoint[16];
  uint16_t endpointPort;
  uint16_t keepalive;
  std::vector<AllowedIp> allowed;
};

struct DeviceChange {
  uint8_t flags = 0;
  uint8_t privateKey[kKeyLen] = {};
  uint16_t listenPort = 0;
  uint32_t fwmark = 0;
  std::vector<PeerChange> peers;
};

// "" or why the stream is malformed.
std::string ParseChange(const uint8_t* p, size_t len, DeviceChange* out);

// The SET_DEVICE messages for `c` on device `name`, each at most `maxMsg` bytes.
std::vector<std::vector<char>> BuildSetMessages(uint16_t familyId, const std::string& name, const DeviceChange& c,
                                                size_t maxMsg);

struct Peer {
  std::string publicKey;  // hex
  std::string endpoint;   // "1.2.3.4:51820", "[fd00::1]:51821", "" for none
  int keepalive = 0;
  int64_t lastHandshakeSec = 0;
  uint64_t rxBytes = 0;
  uint64_t txBytes = 0;
  std::vector<std::string> allowedIps;  // "10.0.0.0/26"
};

struct Device {
  bool found = false;
  int ifindex = 0;
  std::string privateKey;  // hex, "" when none
  std::string publicKey;   // hex, "" when none
  int listenPort = 0;
  uint32_t fwmark = 0;
  std::vector<Peer> peers;
};

// Folds one GET_DEVICE reply message into `d` (a device's peers may span several).
void ParseGetReply(const void* msg, size_t len, Device* d);

struct Result {
  int sysErrno = 0;  // the socket failed
  std::string sysWhat;
  int err = 0;            // the kernel refused (positive errno); ENODEV: no such device
  bool noFamily = false;  // the kernel has no "wireguard" family (no module)
  std::string badInput;
  size_t messages = 0;
  Device device;
};

Result GetDevice(const std::string& name);
Result SetDevice(const std::string& name, const uint8_t* change, size_t len);

}  // namespace palisade::wg
