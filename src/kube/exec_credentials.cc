#include "kube/exec_credentials.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/time/time.h"
#include "core/duration.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "nlohmann/json.hpp"

extern char** environ;

namespace canhazgpu::kube {
namespace {

using nlohmann::json;

constexpr char kExecInfoEnv[] = "KUBERNETES_EXEC_INFO";

std::string Quoted(const ExecConfig& exec) { return StrCat("exec plugin \"", exec.command, "\""); }

// An installHint is often several lines; errors are one.
std::string OneLine(std::string text) {
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return std::string(Trim(text));
}

// The inherited environment with `exec.env` and KUBERNETES_EXEC_INFO added;
// a later value of a name replaces an earlier one, as in Go's os/exec.
std::vector<std::string> PluginEnvironment(const RestConfig& config) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  auto set = [&](const std::string& name, const std::string& value) {
    std::erase_if(env, [&](const std::string& kv) { return kv.starts_with(name + "="); });
    env.push_back(StrCat(name, "=", value));
  };
  for (const auto& [name, value] : config.exec->env) set(name, value);
  set(kExecInfoEnv, ExecInfo(config));
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

absl::Status StartError(const ExecConfig& exec, int err) {
  if (err != ENOENT) {
    return absl::FailedPreconditionError(
        StrCat("cannot run ", Quoted(exec), ": ", std::strerror(err)));
  }
  // client-go prints the kubeconfig's installHint here: it says how to get
  // the plugin.
  std::string message = StrCat(Quoted(exec), " not found");
  if (exec.command.find('/') == std::string::npos) message += " on PATH";
  if (!exec.install_hint.empty()) message += StrCat(": ", OneLine(exec.install_hint));
  return absl::NotFoundError(message);
}

// A started plugin: its pid (also its process group) and its stdout.
struct Running {
  pid_t pid = -1;
  int out = -1;
};

absl::StatusOr<Running> Start(const RestConfig& config) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    return absl::InternalError(
        StrCat("cannot run ", Quoted(*config.exec), ": pipe: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  // Like Go's os/exec, the plugin gets stdin, stdout and stderr and no other
  // descriptor of ours (a socket to the API server, say).
#if __GLIBC_PREREQ(2, 34)
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
#endif
  // A group of its own, so the timeout kills what the plugin started too (a
  // shell script's `sleep` would otherwise hold stdout open); and, whatever
  // this process set, default SIGPIPE and no blocked signals.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t signals;
  sigemptyset(&signals);
  posix_spawnattr_setsigmask(&attr, &signals);
  sigaddset(&signals, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &signals);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  std::vector<std::string> args = {config.exec->command};
  args.insert(args.end(), config.exec->args.begin(), config.exec->args.end());
  std::vector<std::string> env = PluginEnvironment(config);
  Running run;
  // posix_spawnp looks a command without '/' up on our PATH, as Go's
  // exec.Command does (not on a PATH set in exec.env).
  const int rc = posix_spawnp(&run.pid, args[0].c_str(), &actions, &attr, Pointers(args).data(),
                              Pointers(env).data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (rc != 0) {
    close(out[0]);
    return StartError(*config.exec, rc);
  }
  run.out = out[0];
  return run;
}

struct Finished {
  std::string out;
  int wait_status = 0;
  bool timed_out = false;
  bool too_much = false;
};

// Reads stdout to its end, then waits for the exit, as Go's exec.Cmd.Run
// does; at the deadline, or past `max_output`, kills the plugin's group.
// The machine's clock, whatever the authenticator's: poll() and waitpid()
// wait in real time.
Finished Collect(Running run, const ExecOptions& options) {
  const Clock& real = RealClock();
  const auto deadline = real.MonoNow() + options.timeout;
  auto left = [&] {
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - real.MonoNow());
    return static_cast<int>(std::clamp<int64_t>(ms.count(), 0, INT32_MAX));
  };
  Finished done;
  char buf[16384];
  while (true) {
    const int wait = left();
    if (wait == 0) {
      done.timed_out = true;
      break;
    }
    pollfd p{run.out, POLLIN, 0};
    if (poll(&p, 1, wait) <= 0) continue;
    const ssize_t n = read(run.out, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
    if (n > 0) done.out.append(buf, static_cast<size_t>(n));
    if (done.out.size() > options.max_output) {
      done.too_much = true;
      break;
    }
  }
  close(run.out);
  bool exited = false;
  while (!done.too_much && !done.timed_out) {
    exited = waitpid(run.pid, &done.wait_status, WNOHANG) == run.pid;
    if (exited) break;
    // It closed stdout but has not exited yet; normally a matter of moments.
    real.SleepFor(std::chrono::milliseconds(std::min(left(), 10)));
    done.timed_out = left() == 0;
  }
  if (!exited) {
    kill(-run.pid, SIGKILL);
    while (waitpid(run.pid, &done.wait_status, 0) < 0 && errno == EINTR) {
    }
  }
  return done;
}

absl::Status RunError(const ExecConfig& exec, const Finished& done, const ExecOptions& options) {
  if (done.timed_out) {
    return absl::DeadlineExceededError(StrCat(Quoted(exec), " did not finish within ",
                                              FormatDurationShort(options.timeout),
                                              " and was killed"));
  }
  if (done.too_much) {
    return absl::InvalidArgumentError(
        StrCat(Quoted(exec), " printed more than ", options.max_output, " bytes"));
  }
  if (WIFSIGNALED(done.wait_status)) {
    return absl::UnauthenticatedError(
        StrCat(Quoted(exec), " was killed by signal ", WTERMSIG(done.wait_status)));
  }
  if (WEXITSTATUS(done.wait_status) != 0) {
    return absl::UnauthenticatedError(
        StrCat(Quoted(exec), " failed with exit status ", WEXITSTATUS(done.wait_status)));
  }
  return absl::OkStatus();
}

// A string field of `object`, or "" when absent; false when present and not
// a string.
bool StringField(const json& object, const char* name, std::string* out) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return true;
  if (!it->is_string()) return false;
  *out = it->get<std::string>();
  return true;
}

absl::StatusOr<std::optional<TimePoint>> ParseExpiry(const ExecConfig& exec, const json& status) {
  std::string text;
  if (!StringField(status, "expirationTimestamp", &text)) {
    return absl::InvalidArgumentError(
        StrCat(Quoted(exec), " returned an expirationTimestamp that is not a string"));
  }
  if (text.empty()) return std::nullopt;
  absl::Time time;
  std::string why;
  if (!absl::ParseTime(absl::RFC3339_full, text, &time, &why)) {
    return absl::InvalidArgumentError(StrCat(Quoted(exec), " returned expirationTimestamp \"", text,
                                             "\", which is not an RFC 3339 time"));
  }
  return std::chrono::time_point_cast<TimePoint::duration>(absl::ToChronoTime(time));
}

}  // namespace

std::string ExecInfo(const RestConfig& config) {
  // Keys in client-go's order, fields it omits when empty omitted too.
  nlohmann::ordered_json info = {{"kind", "ExecCredential"},
                                 {"apiVersion", config.exec->api_version},
                                 {"spec", {{"interactive", false}}}};
  if (config.exec->provide_cluster_info) {
    nlohmann::ordered_json cluster = {{"server", config.server}};
    if (!config.tls_server_name.empty()) cluster["tls-server-name"] = config.tls_server_name;
    if (config.insecure_skip_tls_verify) cluster["insecure-skip-tls-verify"] = true;
    if (!config.ca_pem.empty()) {
      cluster["certificate-authority-data"] = absl::Base64Escape(config.ca_pem);
    }
    info["spec"]["cluster"] = std::move(cluster);
  }
  return info.dump();
}

absl::StatusOr<ExecCredential> ParseExecCredential(const ExecConfig& exec,
                                                   std::string_view output) {
  const json doc = json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError(
        StrCat(Quoted(exec), " printed something that is not a JSON ExecCredential"));
  }
  std::string kind, api_version;
  if (!StringField(doc, "kind", &kind) || kind != "ExecCredential") {
    return absl::InvalidArgumentError(
        StrCat(Quoted(exec), " printed kind \"", doc.value("kind", ""), "\", not ExecCredential"));
  }
  StringField(doc, "apiVersion", &api_version);
  if (api_version != exec.api_version) {
    // client-go's words.
    return absl::InvalidArgumentError(StrCat(Quoted(exec), " is configured to use API version ",
                                             exec.api_version, ", plugin returned version ",
                                             api_version.empty() ? "(none)" : api_version));
  }
  auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) {
    return absl::InvalidArgumentError(StrCat(Quoted(exec), " didn't return a status field"));
  }
  ExecCredential credential;
  if (!StringField(*status, "token", &credential.token) ||
      !StringField(*status, "clientCertificateData", &credential.client_cert_pem) ||
      !StringField(*status, "clientKeyData", &credential.client_key_pem)) {
    return absl::InvalidArgumentError(
        StrCat(Quoted(exec), " returned a token, certificate or key that is not a string"));
  }
  if (credential.token.empty() && credential.client_cert_pem.empty() &&
      credential.client_key_pem.empty()) {
    return absl::InvalidArgumentError(
        StrCat(Quoted(exec), " didn't return a token or cert/key pair"));
  }
  if (credential.client_cert_pem.empty() != credential.client_key_pem.empty()) {
    return absl::InvalidArgumentError(
        StrCat(Quoted(exec), " returned only certificate or key, not both"));
  }
  ASSIGN_OR_RETURN(credential.expiry, ParseExpiry(exec, *status));
  return credential;
}

absl::StatusOr<ExecCredential> RunExecPlugin(const RestConfig& config, const ExecOptions& options) {
  ASSIGN_OR_RETURN(Running run, Start(config));
  const Finished done = Collect(run, options);
  RETURN_IF_ERROR(RunError(*config.exec, done, options));
  return ParseExecCredential(*config.exec, done.out);
}

absl::StatusOr<std::unique_ptr<ExecAuthenticator>> ExecAuthenticator::Create(
    const RestConfig& config, ExecOptions options, const Clock* clock) {
  const ExecConfig& exec = *config.exec;
  if (exec.api_version != kExecApiV1 && exec.api_version != kExecApiV1Beta1) {
    return absl::InvalidArgumentError(StrCat(Quoted(exec), ": apiVersion \"", exec.api_version,
                                             "\" is not ", kExecApiV1, " or ", kExecApiV1Beta1));
  }
  if (exec.api_version == kExecApiV1 && exec.interactive_mode.empty()) {
    return absl::InvalidArgumentError(
        StrCat(Quoted(exec), ": interactiveMode must be specified for ", kExecApiV1));
  }
  if (exec.interactive_mode == "Always") {
    return absl::InvalidArgumentError(
        StrCat(Quoted(exec),
               " has interactiveMode Always, and k8shazgpu cannot run an interactive plugin; "
               "use a plugin or setting that needs no terminal"));
  }
  if (!exec.interactive_mode.empty() && exec.interactive_mode != "Never" &&
      exec.interactive_mode != "IfAvailable") {
    return absl::InvalidArgumentError(StrCat(Quoted(exec), ": interactiveMode \"",
                                             exec.interactive_mode,
                                             "\" is not Never, IfAvailable or Always"));
  }
  return std::unique_ptr<ExecAuthenticator>(
      new ExecAuthenticator(config, options, clock != nullptr ? *clock : RealClock()));
}

ExecAuthenticator::ExecAuthenticator(const RestConfig& config, ExecOptions options,
                                     const Clock& clock)
    : config_(config), options_(options), clock_(clock) {}

absl::StatusOr<std::shared_ptr<const ExecCredential>> ExecAuthenticator::Get() {
  MutexLock lock(mu_);
  // client-go's test: expired once now is after the expiry.
  if (cached_ != nullptr && !(cached_->expiry && clock_.Now() > *cached_->expiry)) return cached_;
  cached_.reset();
  ASSIGN_OR_RETURN(ExecCredential fresh, RunExecPlugin(config_, options_));
  cached_ = std::make_shared<const ExecCredential>(std::move(fresh));
  return cached_;
}

void ExecAuthenticator::Forget(const ExecCredential* used) {
  MutexLock lock(mu_);
  if (cached_.get() == used) cached_.reset();
}

}  // namespace canhazgpu::kube
