#include "httpfront/http_request_frame.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace canhazgpu::httpfront {
namespace {

constexpr size_t kHead = 1024;
constexpr size_t kBody = 100;

TEST(RequestFrameTest, WaitsForTheBlankLineAndTheBody) {
  EXPECT_EQ(FrameRequest("", kHead, kBody).kind, RequestFrame::kIncomplete);
  EXPECT_EQ(FrameRequest("GET / HTTP/1.1\r\nHost: a\r\n", kHead, kBody).kind,
            RequestFrame::kIncomplete);
  const std::string get = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
  RequestFrame f = FrameRequest(get + "GET /next", kHead, kBody);
  EXPECT_EQ(f.kind, RequestFrame::kComplete);
  EXPECT_EQ(f.size, get.size());  // a pipelined request is left for later
  const std::string post = "POST / HTTP/1.1\r\ncontent-LENGTH: 3\r\n\r\n";
  EXPECT_EQ(FrameRequest(post + "ab", kHead, kBody).kind, RequestFrame::kIncomplete);
  f = FrameRequest(post + "abcGET", kHead, kBody);
  EXPECT_EQ(f.kind, RequestFrame::kComplete);
  EXPECT_EQ(f.size, post.size() + 3);
}

TEST(RequestFrameTest, RefusesWhatItCannotFrame) {
  EXPECT_EQ(FrameRequest(std::string(kHead + 1, 'A'), kHead, kBody).status, 431);
  EXPECT_EQ(
      FrameRequest("GET / HTTP/1.1\r\nX: " + std::string(kHead, 'a') + "\r\n\r\n", kHead, kBody)
          .status,
      431);
  EXPECT_EQ(FrameRequest("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", kHead, kBody).status,
            413);
  EXPECT_EQ(FrameRequest("POST / HTTP/1.1\r\nContent-Length: -5\r\n\r\n", kHead, kBody).status,
            400);
  EXPECT_EQ(FrameRequest("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n",
                         kHead, kBody)
                .status,
            400);
  EXPECT_EQ(FrameRequest("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
                         kHead, kBody)
                .status,
            400);
  EXPECT_EQ(
      FrameRequest("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", kHead, kBody).status,
      411);
}

TEST(RequestFrameTest, PlainAnswerIsOneLineAndCloses) {
  const std::string a = PlainAnswer(503, "too many connections");
  EXPECT_THAT(a, ::testing::StartsWith("HTTP/1.1 503 Service Unavailable\r\n"));
  EXPECT_THAT(a, ::testing::HasSubstr("Connection: close\r\n"));
  EXPECT_THAT(a, ::testing::EndsWith("\r\n\r\ntoo many connections\n"));
}

}  // namespace
}  // namespace canhazgpu::httpfront
