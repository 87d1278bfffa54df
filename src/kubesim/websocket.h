// The server's half of a WebSocket (RFC 6455) as `kubectl exec` speaks it
// to an API server (channel.k8s.io subprotocols: every binary message
// starts with the stream it belongs to: 0 stdin, 1 stdout, 2 stderr, 3 the
// final Status, 4 terminal resizes, 255 a closed stream (v5)). Pure;
// thread-safe, except WebSocketReader (one per connection).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace canhazgpu::kubesim {

// Sec-WebSocket-Accept for a client's Sec-WebSocket-Key.
std::string WebSocketAccept(std::string_view key);

// The subprotocol to answer with among the client's offer
// ("v5.channel.k8s.io, v4.channel.k8s.io, ..."): v5 or v4 (the ones whose
// error stream carries a Status); "" when neither is offered.
std::string ChooseChannelProtocol(std::string_view offered);

// One unmasked, final binary message: `channel`, then `data`.
std::string ChannelFrame(int channel, std::string_view data);
// A close message with status 1000 (normal closure).
std::string CloseFrame();

}  // namespace canhazgpu::kubesim

namespace canhazgpu::kubesim {

// What a client sent: its messages, unmasked, as they complete. Feed it
// bytes as they arrive.
class WebSocketReader {
 public:
  struct Message {
    int opcode;  // 0x2 binary, 0x1 text, 0x8 close, 0x9 ping, 0xa pong
    std::string payload;
  };
  void Feed(std::string_view bytes) { buffer_.append(bytes); }
  // The next complete message, if one has arrived. Fragmented messages
  // (which kubectl does not send) come as their frames.
  std::optional<Message> Next();

 private:
  std::string buffer_;
};

}  // namespace canhazgpu::kubesim
