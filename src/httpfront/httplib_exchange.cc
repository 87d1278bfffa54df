#include "httpfront/httplib_exchange.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace canhazgpu::httpfront {
namespace {

// One whole request to read and a string to write the answer into.
class ExchangeStream : public httplib::Stream {
 public:
  ExchangeStream(const Exchange& ex, std::string* out) : ex_(ex), out_(out) {}
  using httplib::Stream::write;

  bool is_readable() const override { return read_ < ex_.request.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, ex_.request.size() - read_);
    std::memcpy(ptr, ex_.request.data() + read_, n);
    read_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    out_->append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = ex_.remote_ip;
    port = ex_.remote_port;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = ex_.local_ip;
    port = ex_.local_port;
  }
  socket_t socket() const override { return ex_.fd; }

 private:
  const Exchange& ex_;
  std::string* out_;
  size_t read_ = 0;
};

}  // namespace

Answer HttplibExchange::Serve(const Exchange& ex) {
  Answer answer;
  ExchangeStream stream(ex, &answer.bytes);
  bool closed = false;
  answer.close = !process_request(stream, false, closed, nullptr) || closed;
  return answer;
}

}  // namespace canhazgpu::httpfront
