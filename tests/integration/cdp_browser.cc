#include "integration/cdp_browser.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

namespace canhazgpu::testing {
namespace {

std::string Base64Decode(const std::string& in) {
  static const std::string kChars =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int bits = 0, value = 0;
  for (char c : in) {
    size_t pos = kChars.find(c);
    if (pos == std::string::npos) continue;  // padding, newlines
    value = (value << 6) | static_cast<int>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((value >> bits) & 0xff);
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> CdpBrowser::Find() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    for (const char* name : {"chromium", "chromium-browser"}) {
      std::string candidate = dirs.substr(start, end - start) + "/" + name;
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

CdpBrowser::CdpBrowser(const std::string& binary, const std::string& profile_dir) {
  // A browser that dies must not take the test with it through SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  int commands[2], replies[2];
  if (pipe2(commands, O_CLOEXEC) != 0 || pipe2(replies, O_CLOEXEC) != 0) return;
  pid_ = fork();
  if (pid_ == 0) {
    // The browser reads commands on fd 3 and writes replies on fd 4. Move
    // the pipe ends out of the way first: dup2 onto the same number would
    // keep O_CLOEXEC.
    int in = fcntl(commands[0], F_DUPFD, 10);
    int out = fcntl(replies[1], F_DUPFD, 10);
    dup2(in, 3);
    dup2(out, 4);
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(devnull, 1);
    dup2(devnull, 2);
    std::string profile = "--user-data-dir=" + profile_dir;
    execl(binary.c_str(), binary.c_str(), "--headless=new", "--no-sandbox", "--disable-gpu",
          "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
          "--disable-extensions", "--remote-debugging-pipe", "--window-size=1280,900",
          profile.c_str(), "about:blank", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(commands[0]);
  close(replies[1]);
  to_browser_ = commands[1];
  from_browser_ = replies[0];
}

CdpBrowser::~CdpBrowser() {
  if (pid_ <= 0) return;
  Call("Browser.close", nlohmann::json::object(), false);
  close(to_browser_);
  close(from_browser_);
  for (int i = 0; i < 100; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    usleep(50'000);
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

nlohmann::json CdpBrowser::Call(const std::string& method, nlohmann::json params, bool in_session) {
  const int id = next_id_++;
  nlohmann::json message = {{"id", id}, {"method", method}, {"params", std::move(params)}};
  if (in_session) message["sessionId"] = session_;
  std::string text = message.dump();
  text.push_back('\0');
  size_t sent = 0;
  while (sent < text.size()) {
    ssize_t n = write(to_browser_, text.data() + sent, text.size() - sent);
    if (n <= 0) return nullptr;
    sent += static_cast<size_t>(n);
  }
  // Replies and events arrive in order; skip events and other replies.
  for (int waited_ms = 0; waited_ms < 30'000;) {
    size_t end;
    while ((end = pending_.find('\0')) != std::string::npos) {
      nlohmann::json reply = nlohmann::json::parse(pending_.substr(0, end), nullptr, false);
      pending_.erase(0, end + 1);
      if (!reply.is_discarded() && reply.value("id", -1) == id) return reply;
    }
    pollfd pfd{from_browser_, POLLIN, 0};
    if (poll(&pfd, 1, 100) <= 0) {
      waited_ms += 100;
      continue;
    }
    char buf[65536];
    ssize_t n = read(from_browser_, buf, sizeof buf);
    if (n <= 0) return nullptr;
    pending_.append(buf, static_cast<size_t>(n));
  }
  return nullptr;
}

bool CdpBrowser::Open(const std::string& url) {
  nlohmann::json target = Call("Target.createTarget", {{"url", url}}, false);
  if (!target.is_object() || !target.contains("result")) return false;
  nlohmann::json attached =
      Call("Target.attachToTarget", {{"targetId", target["result"]["targetId"]}, {"flatten", true}},
           false);
  if (!attached.is_object() || !attached.contains("result")) return false;
  session_ = attached["result"]["sessionId"];
  return true;
}

nlohmann::json CdpBrowser::Evaluate(const std::string& expression) {
  nlohmann::json reply =
      Call("Runtime.evaluate", {{"expression", expression}, {"returnByValue", true}}, true);
  if (!reply.is_object() || !reply.contains("result") ||
      reply["result"].contains("exceptionDetails")) {
    return nullptr;
  }
  return reply["result"]["result"].value("value", nlohmann::json(nullptr));
}

std::string CdpBrowser::Screenshot() {
  nlohmann::json reply = Call("Page.captureScreenshot", {{"format", "png"}}, true);
  if (!reply.is_object() || !reply.contains("result")) return "";
  return Base64Decode(reply["result"].value("data", ""));
}

}  // namespace canhazgpu::testing
