#include "cacheplan/image_ref.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace canhazgpu::cacheplan {
namespace {

using ::testing::HasSubstr;

const std::string kSha = "sha256:" + std::string(64, 'a');

struct Case {
  std::string ref;
  ImageRef want;
};

TEST(ParseImageRefTest, NormalisesAsDockerDoes) {
  const std::vector<Case> cases = {
      {"nginx", {"docker.io", "library/nginx", "", ""}},
      {"nginx:1.27", {"docker.io", "library/nginx", "1.27", ""}},
      {"vllm/vllm-openai:v0.6.3", {"docker.io", "vllm/vllm-openai", "v0.6.3", ""}},
      {"docker.io/nginx", {"docker.io", "library/nginx", "", ""}},
      {"index.docker.io/library/nginx:latest", {"docker.io", "library/nginx", "latest", ""}},
      {"ghcr.io/org/team/app:v1", {"ghcr.io", "org/team/app", "v1", ""}},
      {"GHCR.io/org/app", {"ghcr.io", "org/app", "", ""}},
      {"localhost/app", {"localhost", "app", "", ""}},
      {"localhost:5000/app:dev", {"localhost:5000", "app", "dev", ""}},
      {"registry.example.com:8443/a/b", {"registry.example.com:8443", "a/b", "", ""}},
      {"[::1]:5000/app", {"[::1]:5000", "app", "", ""}},
      {"nginx@" + kSha, {"docker.io", "library/nginx", "", kSha}},
      {"quay.io/x/y:tag@" + kSha, {"quay.io", "x/y", "tag", kSha}},
      {"public.ecr.aws/q9t5s3a7/vllm-ci-postmerge-repo:0123456789abcdef0123456789abcdef01234567",
       {"public.ecr.aws", "q9t5s3a7/vllm-ci-postmerge-repo",
        "0123456789abcdef0123456789abcdef01234567", ""}},
      {"my_org/my__app-x.y", {"docker.io", "my_org/my__app-x.y", "", ""}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ImageRef> got = ParseImageRef(c.ref);
    ASSERT_TRUE(got.ok()) << c.ref << ": " << got.status();
    EXPECT_EQ(*got, c.want) << c.ref;
  }
}

TEST(ParseImageRefTest, StringIsTheFullyQualifiedReference) {
  EXPECT_EQ(ParseImageRef("nginx")->String(), "docker.io/library/nginx:latest");
  EXPECT_EQ(ParseImageRef("ghcr.io/a/b:v1")->String(), "ghcr.io/a/b:v1");
  EXPECT_EQ(ParseImageRef("a/b@" + kSha)->String(), "docker.io/a/b@" + kSha);
  EXPECT_EQ(ParseImageRef("localhost:5000/app")->Name(), "localhost:5000/app");
}

TEST(ParseImageRefTest, RefusesWhatTheGrammarRefuses) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {"Nginx", "repository component \"Nginx\""},
      {"ghcr.io/Org/app", "repository component \"Org\""},
      {"app:", "tag \"\""},
      {"app:-x", "tag \"-x\""},
      {"app:" + std::string(129, 'a'), "tag"},
      {"a//b", "repository component \"\""},
      {"a/b/", "repository component \"\""},
      {"-a", "repository component \"-a\""},
      {"a..b", "repository component \"a..b\""},
      {"a@sha256:abc", "64 hex digits"},
      {"a@sha256:" + std::string(64, 'A'), "lowercase hex"},
      {"a@nohex", "ALGORITHM:HEX"},
      {"a@md5:" + std::string(8, 'a'), "too short"},
      {"bad_host.com:x/a", "registry \"bad_host.com:x\""},
      {"bad-.com/a", "registry \"bad-.com\""},
      {":tag", "no repository"},
      {std::string(300, 'a'), "longer than 255"},
      {"has space", "repository component"},
  };
  for (const auto& [ref, why] : cases) {
    absl::StatusOr<ImageRef> got = ParseImageRef(ref);
    ASSERT_FALSE(got.ok()) << ref << " parsed as " << got->String();
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(got.status().message(), HasSubstr(why)) << ref;
    EXPECT_THAT(got.status().message(), HasSubstr("invalid image reference"));
  }
}

}  // namespace
}  // namespace canhazgpu::cacheplan
