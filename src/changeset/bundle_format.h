// What the bundle's writer (bundle.cc) and reader (bundle_reader.cc) share:
// the header's layout (bundle.h) and the checksum. Internal to changeset.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace canhazgpu::changeset::internal {

inline constexpr char kBundleMagic[8] = {'K', '8', 'H', 'Z', 'C', 'S', 'E', 'T'};
inline constexpr size_t kBundleHeaderSize = 40;

// The CRC-32 of `bytes` continued from `crc` (0 to start).
inline uint32_t Crc32(uint32_t crc, std::string_view bytes) {
  uLong value = crc;
  // zlib takes uInt lengths; feed large inputs in pieces.
  while (!bytes.empty()) {
    const size_t n = std::min<size_t>(bytes.size(), 1u << 30);
    value = crc32(value, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n));
    bytes.remove_prefix(n);
  }
  return static_cast<uint32_t>(value);
}

}  // namespace canhazgpu::changeset::internal
