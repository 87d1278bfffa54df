#include "kubesim/websocket.h"

#include <openssl/sha.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace canhazgpu::kubesim {
namespace {

// An unmasked final frame of `opcode` carrying `payload`.
std::string Frame(int opcode, std::string_view payload) {
  std::string out;
  out += static_cast<char>(0x80 | opcode);
  const uint64_t size = payload.size();
  if (size < 126) {
    out += static_cast<char>(size);
  } else if (size <= 0xffff) {
    out += static_cast<char>(126);
    out += static_cast<char>(size >> 8);
    out += static_cast<char>(size & 0xff);
  } else {
    out += static_cast<char>(127);
    for (int shift = 56; shift >= 0; shift -= 8) out += static_cast<char>((size >> shift) & 0xff);
  }
  out.append(payload);
  return out;
}

}  // namespace

std::string WebSocketAccept(std::string_view key) {
  const std::string text = std::string(key) + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return absl::Base64Escape(
      absl::string_view(reinterpret_cast<const char*>(digest), SHA_DIGEST_LENGTH));
}

std::string ChooseChannelProtocol(std::string_view offered) {
  bool v4 = false;
  for (absl::string_view p :
       absl::StrSplit(absl::string_view(offered.data(), offered.size()), ',')) {
    const absl::string_view name = absl::StripAsciiWhitespace(p);
    if (name == "v5.channel.k8s.io") return "v5.channel.k8s.io";
    v4 = v4 || name == "v4.channel.k8s.io";
  }
  return v4 ? "v4.channel.k8s.io" : "";
}

std::string ChannelFrame(int channel, std::string_view data) {
  std::string payload(1, static_cast<char>(channel));
  payload.append(data);
  return Frame(0x2, payload);
}

std::string CloseFrame() { return Frame(0x8, std::string("\x03\xe8", 2)); }

std::optional<WebSocketReader::Message> WebSocketReader::Next() {
  if (buffer_.size() < 2) return std::nullopt;
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(buffer_[i]); };
  const int opcode = byte(0) & 0x0f;
  const bool masked = (byte(1) & 0x80) != 0;
  uint64_t size = byte(1) & 0x7f;
  size_t at = 2;
  if (size == 126 || size == 127) {
    const size_t width = size == 126 ? 2 : 8;
    if (buffer_.size() < at + width) return std::nullopt;
    size = 0;
    for (size_t i = 0; i < width; ++i) size = (size << 8) | byte(at + i);
    at += width;
  }
  const size_t mask_at = at;
  if (masked) at += 4;
  if (size > (uint64_t{1} << 32) || buffer_.size() < at + size) return std::nullopt;
  Message message{opcode, buffer_.substr(at, size)};
  if (masked) {
    for (size_t i = 0; i < message.payload.size(); ++i)
      message.payload[i] = static_cast<char>(message.payload[i] ^ buffer_[mask_at + i % 4]);
  }
  buffer_.erase(0, at + size);
  return message;
}

}  // namespace canhazgpu::kubesim
