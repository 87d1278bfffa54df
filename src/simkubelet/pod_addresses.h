// The simulated cluster's pod addresses: each pod its own IPv4 address on
// the machine's loopback (Linux routes all of 127.0.0.0/8 to `lo`, so a
// process can bind any of them and every other process reach it). A
// cluster takes a block of 4096, 127.a.b.0/20 with a in 1..254 — never
// 127.0.x.x, which holds 127.0.0.1 and Debian's 127.0.1.1 for the machine
// — chosen at random, so that two simulated clusters on one machine almost
// never share an address (1 in 4064). Addresses ending in .0 and .255 are
// skipped (they only look like network and broadcast addresses), leaving
// 4064 pods at a time per cluster.
//
// Plain value; not thread-safe (PodNetwork guards it).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

namespace canhazgpu::simkubelet {

class PodAddressBlock {
 public:
  static constexpr uint32_t kSize = 4096;

  // A block starting at `first` (host byte order); IsBlockStart(first).
  explicit PodAddressBlock(uint32_t first) : first_(first) {}
  // Whether `first` starts a block as above.
  static bool IsBlockStart(uint32_t first);
  // A block start at random.
  static uint32_t RandomBlockStart();

  // The next free address after the one given last (so that an address
  // just freed is not given again soon); nullopt when all are taken.
  std::optional<std::string> Allocate();
  // Frees `address`; one the block did not give is ignored.
  void Release(const std::string& address);
  size_t taken() const { return taken_.size(); }
  std::string cidr() const;  // "127.a.b.0/20"

 private:
  uint32_t first_;
  uint32_t next_ = 0;         // the offset to try first
  std::set<uint32_t> taken_;  // offsets
};

// "a.b.c.d" of an address in host byte order.
std::string FormatIpv4(uint32_t address);

}  // namespace canhazgpu::simkubelet
