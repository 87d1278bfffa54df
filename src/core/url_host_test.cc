#include "core/url_host.h"

#include "gtest/gtest.h"

namespace canhazgpu {
namespace {

TEST(UrlHostTest, ReadsSchemeAndHostOfEveryFormTheCacheFetches) {
  EXPECT_EQ(ParseUrlHost("https://GitHub.com/org/repo.git"),
            (UrlHost{.scheme = "https", .host = "github.com"}));
  EXPECT_EQ(ParseUrlHost("HTTP://user:pw@127.0.0.1:8080/r.git?x=1"),
            (UrlHost{.scheme = "http", .host = "127.0.0.1"}));
  EXPECT_EQ(ParseUrlHost("ssh://git@[::1]:2222/r.git"), (UrlHost{.scheme = "ssh", .host = "::1"}));
  EXPECT_EQ(ParseUrlHost("git@github.com:me/vllm.git"),
            (UrlHost{.scheme = "ssh", .host = "github.com"}));
  EXPECT_EQ(ParseUrlHost("file:///srv/r"), (UrlHost{.scheme = "file", .host = ""}));
  // The userinfo cannot pose as the host.
  EXPECT_EQ(ParseUrlHost("https://github.com@evil.example/r")->host, "evil.example");
  EXPECT_EQ(ParseUrlHost("https://evil.example#@github.com/r")->host, "evil.example");
}

TEST(UrlHostTest, RefusesWhatNamesNoHost) {
  EXPECT_EQ(ParseUrlHost("https:///r"), std::nullopt);
  EXPECT_EQ(ParseUrlHost("/srv/r"), std::nullopt);
  EXPECT_EQ(ParseUrlHost("relative/dir:x"), std::nullopt);
  EXPECT_EQ(ParseUrlHost(":path"), std::nullopt);
  EXPECT_EQ(ParseUrlHost(""), std::nullopt);
}

TEST(UrlHostTest, StripsPortsAndKnowsLoopback) {
  EXPECT_EQ(HostWithoutPort("GHCR.io:443"), "ghcr.io");
  EXPECT_EQ(HostWithoutPort("[::1]:5000"), "::1");
  EXPECT_EQ(HostWithoutPort("fe80::1"), "fe80::1");
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1:8080"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_TRUE(IsLoopbackHost("[::1]:1"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("localhost.evil.example"));
}

}  // namespace
}  // namespace canhazgpu
