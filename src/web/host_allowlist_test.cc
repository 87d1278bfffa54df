#include "web/host_allowlist.h"

#include <gtest/gtest.h>

namespace canhazgpu::web {
namespace {

TEST(HostAllowlistTest, LoopbackNamesWithAnyPort) {
  const HostAllowlist hosts({});
  for (const char* h : {"localhost", "LOCALHOST:8080", "localhost.", "127.0.0.1", "127.0.0.1:9",
                        "127.1.2.3:8080", "[::1]", "[::1]:8080", ""}) {
    EXPECT_TRUE(hosts.Allows(h)) << h;
  }
}

TEST(HostAllowlistTest, RefusesOtherNamesAsARebindingPageWouldSend) {
  const HostAllowlist hosts({});
  for (const char* h :
       {"evil.example", "evil.example:8080", "localhost.evil.example", "app.localhost", "128.0.0.1",
        "10.0.0.1:8080", "[::2]", "::1", "localhost:http", "localhost:8080:1", "[::1", "[::1]x",
        "local host", "localhost\r\nX: y", "0.0.0.0"}) {
    EXPECT_FALSE(hosts.Allows(h)) << h;
  }
}

TEST(HostAllowlistTest, ListedNamesAndAddressesButNeverWildcards) {
  const HostAllowlist hosts(
      {"GPUBOX", "dash.example.com:443", "10.0.0.5", "fe80::1", "[fd00::2]", "0.0.0.0", "::", ""});
  for (const char* h : {"gpubox", "gpubox:8080", "Dash.Example.Com", "10.0.0.5:8080",
                        "[fe80::1]:80", "[fd00::2]"}) {
    EXPECT_TRUE(hosts.Allows(h)) << h;
  }
  for (const char* h : {"gpubox.evil.example", "10.0.0.6", "0.0.0.0", "[::]"}) {
    EXPECT_FALSE(hosts.Allows(h)) << h;
  }
}

TEST(HostAllowlistTest, NormaliseHost) {
  EXPECT_EQ(NormaliseHost("LocalHost.:8080"), "localhost");
  EXPECT_EQ(NormaliseHost("[::1]:80"), "::1");
  EXPECT_EQ(NormaliseHost("a/b"), "");
  EXPECT_EQ(NormaliseHost("a:123456"), "");
}

}  // namespace
}  // namespace canhazgpu::web
