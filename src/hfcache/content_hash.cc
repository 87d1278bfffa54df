#include "hfcache/content_hash.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/strings.h"

namespace canhazgpu::hfcache {

struct ContentHasher::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

ContentHasher::ContentHasher(HashKind kind, uint64_t size) : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(impl_->ctx, kind == HashKind::kSha256 ? EVP_sha256() : EVP_sha1(), nullptr);
  if (kind == HashKind::kGitBlobSha1) {
    const std::string header = StrCat("blob ", size);
    EVP_DigestUpdate(impl_->ctx, header.data(), header.size() + 1);  // with its '\0'
  }
}

ContentHasher::~ContentHasher() { EVP_MD_CTX_free(impl_->ctx); }

void ContentHasher::Update(std::string_view bytes) {
  EVP_DigestUpdate(impl_->ctx, bytes.data(), bytes.size());
}

std::string ContentHasher::FinishHex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(impl_->ctx, digest, &length);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 0xf];
  }
  return hex;
}

absl::Status HashFilePrefix(const std::string& path, uint64_t bytes, ContentHasher& hasher) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::UnavailableError(StrCat("cannot read ", path, ": ", strerror(errno)));
  }
  std::vector<char> buffer(1 << 20);
  uint64_t left = bytes;
  while (left > 0) {
    const ssize_t n = read(fd, buffer.data(), std::min<uint64_t>(left, buffer.size()));
    if (n <= 0) {
      const int error = n < 0 ? errno : 0;
      close(fd);
      return absl::UnavailableError(
          StrCat("cannot read ", path, ": ", error != 0 ? strerror(error) : "file too short"));
    }
    hasher.Update(std::string_view(buffer.data(), n));
    left -= n;
  }
  close(fd);
  return absl::OkStatus();
}

}  // namespace canhazgpu::hfcache
