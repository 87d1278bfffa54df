#include "cli/common/listen_address.h"

#include "gtest/gtest.h"

namespace canhazgpu::cli {
namespace {

TEST(ListenAddressTest, HostAndPortIncludingIpv6AndAnyPort) {
  absl::StatusOr<ListenAddress> v4 = ParseListenAddress("127.0.0.1:8081");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 8081);
  absl::StatusOr<ListenAddress> v6 = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  EXPECT_EQ(ParseListenAddress("localhost:65535")->port, 65535);
}

TEST(ListenAddressTest, AnythingElseIsOneLine) {
  for (const char* bad : {"", "8080", ":8080", "host:", "host:65536", "host:-1", "host:80x",
                          "::1:80", "[::1:80", "[]:80"}) {
    absl::StatusOr<ListenAddress> parsed = ParseListenAddress(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().message(), std::string("expected HOST:PORT, got '") + bad + "'");
  }
}

}  // namespace
}  // namespace canhazgpu::cli
