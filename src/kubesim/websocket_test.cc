#include "kubesim/websocket.h"

#include "gtest/gtest.h"

namespace canhazgpu::kubesim {
namespace {

TEST(WebSocketTest, TheAcceptKeyIsRfc6455s) {
  // The example of RFC 6455 section 1.3.
  EXPECT_EQ(WebSocketAccept("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

TEST(WebSocketTest, V5IsPreferredThenV4AndOlderOnesAreNotSpoken) {
  EXPECT_EQ(ChooseChannelProtocol("v5.channel.k8s.io, v4.channel.k8s.io, channel.k8s.io"),
            "v5.channel.k8s.io");
  EXPECT_EQ(ChooseChannelProtocol("v4.channel.k8s.io,v3.channel.k8s.io"), "v4.channel.k8s.io");
  EXPECT_EQ(ChooseChannelProtocol("v3.channel.k8s.io, channel.k8s.io"), "");
}

TEST(WebSocketTest, FramesCarryTheChannelAndTheirLength) {
  EXPECT_EQ(ChannelFrame(1, "hi"), std::string("\x82\x03\x01hi", 5));
  const std::string medium = ChannelFrame(2, std::string(200, 'x'));
  EXPECT_EQ(medium.substr(0, 5), std::string("\x82\x7e\x00\xc9\x02", 5));
  EXPECT_EQ(medium.size(), 4u + 201u);
  const std::string large = ChannelFrame(1, std::string(70000, 'x'));
  EXPECT_EQ(large.substr(0, 10), std::string("\x82\x7f\x00\x00\x00\x00\x00\x01\x11\x71", 10));
  EXPECT_EQ(CloseFrame(), std::string("\x88\x02\x03\xe8", 4));
}

TEST(WebSocketTest, TheReaderUnmasksMessagesAsTheyComplete) {
  WebSocketReader reader;
  // RFC 6455 section 5.7: a masked "Hello", fed in two pieces.
  const std::string hello("\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 11);
  reader.Feed(hello.substr(0, 4));
  EXPECT_FALSE(reader.Next().has_value());
  reader.Feed(hello.substr(4));
  std::optional<WebSocketReader::Message> m = reader.Next();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->opcode, 1);
  EXPECT_EQ(m->payload, "Hello");
  EXPECT_FALSE(reader.Next().has_value());
  // An unmasked binary message of 300 bytes (16-bit length), then a close.
  reader.Feed(std::string("\x82\x7e\x01\x2c", 4) + std::string(300, 'y') +
              std::string("\x88\x00", 2));
  m = reader.Next();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->opcode, 2);
  EXPECT_EQ(m->payload.size(), 300u);
  m = reader.Next();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->opcode, 8);
}

}  // namespace
}  // namespace canhazgpu::kubesim
