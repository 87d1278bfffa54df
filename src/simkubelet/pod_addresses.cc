#include "simkubelet/pod_addresses.h"

#include <arpa/inet.h>

#include <random>

#include "core/strings.h"

namespace canhazgpu::simkubelet {
namespace {

constexpr uint32_t kLoopback = 127u << 24;

// Addresses that only look like a network's or a broadcast address.
bool LooksReserved(uint32_t address) {
  const uint32_t last = address & 0xff;
  return last == 0 || last == 0xff;
}

}  // namespace

std::string FormatIpv4(uint32_t address) {
  return StrCat(address >> 24, ".", (address >> 16) & 0xff, ".", (address >> 8) & 0xff, ".",
                address & 0xff);
}

bool PodAddressBlock::IsBlockStart(uint32_t first) {
  const uint32_t second = (first >> 16) & 0xff;
  return (first & 0xff000000u) == kLoopback && first % kSize == 0 && second >= 1 && second <= 254;
}

uint32_t PodAddressBlock::RandomBlockStart() {
  std::random_device random;
  const uint32_t second = 1 + random() % 254;
  const uint32_t sixteenth = random() % 16;  // of the third octet
  return kLoopback | (second << 16) | (sixteenth * kSize);
}

std::optional<std::string> PodAddressBlock::Allocate() {
  for (uint32_t i = 0; i < kSize; ++i) {
    const uint32_t offset = (next_ + i) % kSize;
    if (LooksReserved(first_ + offset) || taken_.contains(offset)) continue;
    taken_.insert(offset);
    next_ = (offset + 1) % kSize;
    return FormatIpv4(first_ + offset);
  }
  return std::nullopt;
}

void PodAddressBlock::Release(const std::string& address) {
  in_addr parsed;
  if (::inet_pton(AF_INET, address.c_str(), &parsed) != 1) return;
  const uint32_t value = ntohl(parsed.s_addr);
  if (value < first_ || value >= first_ + kSize) return;
  taken_.erase(value - first_);
}

std::string PodAddressBlock::cidr() const { return StrCat(FormatIpv4(first_), "/20"); }

}  // namespace canhazgpu::simkubelet
