// Headless Chromium driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: commands on the browser's fd 3, replies on its
// fd 4, each a JSON message ending in NUL), enough to load a page, evaluate
// JavaScript in it and take a screenshot.
#pragma once

#include <optional>
#include <string>

#include "nlohmann/json.hpp"

namespace canhazgpu::testing {

class CdpBrowser {
 public:
  // The chromium binary on PATH, if any.
  static std::optional<std::string> Find();

  // Starts the browser with a fresh profile under `profile_dir`.
  CdpBrowser(const std::string& binary, const std::string& profile_dir);
  ~CdpBrowser();

  bool started() const { return pid_ > 0; }
  // Opens `url` in a new tab and attaches to it; false on failure.
  bool Open(const std::string& url);
  // The value of a JavaScript expression in the page (null on error).
  nlohmann::json Evaluate(const std::string& expression);
  // A PNG of the page, or "" on failure.
  std::string Screenshot();

 private:
  nlohmann::json Call(const std::string& method, nlohmann::json params, bool in_session);

  int pid_ = -1;
  int to_browser_ = -1;
  int from_browser_ = -1;
  int next_id_ = 1;
  std::string session_;
  std::string pending_;  // bytes read past the last message
};

}  // namespace canhazgpu::testing
