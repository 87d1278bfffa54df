// The server's half of a WebSocket (RFC 6455) as `kubectl exec` speaks it
// to an API server (channel.k8s.io subprotocols: every binary message
// starts with the stream it belongs to: 1 stdout, 2 stderr, 3 the final
// Status). Only what the server sends is framed here; the simulated
// server reads nothing from the client after the handshake. Pure;
// thread-safe.
#pragma once

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
