#include "cli/k8shazgpu/context.h"

#include <cstdio>

#include "absl/strings/cord.h"
#include "cli/common/exit_code.h"
#include "cli/k8shazgpu/cluster_defaults.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {

const std::vector<FlagSpec>& GlobalFlags() {
  static const std::vector<FlagSpec> kFlags = {
      {.name = "kubeconfig",
       .has_value = true,
       .value_name = "FILE",
       .help = "the kubeconfig (default: $KUBECONFIG, else ~/.kube/config)"},
      {.name = "context",
       .has_value = true,
       .value_name = "NAME",
       .help = "the kubeconfig context (default: its current-context)"},
      {.name = "namespace",
       .short_name = 'n',
       .has_value = true,
       .value_name = "NS",
       .help = "the namespace (default: the context's, else default)"},
      {.name = "output",
       .short_name = 'o',
       .has_value = true,
       .value_name = "FORMAT",
       .help = "json, yaml or wide, where the command prints objects"},
      {.name = "no-color", .help = "no colors in the output"},
      {.name = "help", .short_name = 'h', .help = "this help"},
  };
  return kFlags;
}

absl::Status Context::Connect() {
  if (client != nullptr) return absl::OkStatus();
  absl::StatusOr<kube::RestConfig> config =
      kube::LoadRestConfig(kube::LoadOptions::FromProcess(kubeconfig, kube_context));
  if (!config.ok()) return config.status();
  rest = *config;
  namespace_name = !namespace_flag.empty()        ? namespace_flag
                   : !rest.namespace_name.empty() ? rest.namespace_name
                                                  : "default";
  kube::ClientOptions options;
  // Interactive use: as kubectl, a short rate limit is not what a person
  // waits on; bounded timeouts are.
  options.qps = 50;
  options.burst = 100;
  if (std::optional<std::string> ms = getenv("K8SHAZGPU_REQUEST_TIMEOUT_MS")) {
    int64_t value = 0;
    if (!ParseInt(*ms, &value) || value <= 0 || value > 600'000) {
      return absl::InvalidArgumentError(StrCat("K8SHAZGPU_REQUEST_TIMEOUT_MS '", *ms,
                                               "' is not a number of milliseconds (1 to 600000)"));
    }
    request_timeout = std::chrono::milliseconds(value);
  }
  options.timeout = request_timeout;
  options.max_retries = kRequestRetries;
  options.backoff_cap = std::chrono::milliseconds(2'000);
  options.clock = clock;
  absl::StatusOr<std::unique_ptr<kube::Client>> made = kube::Client::Create(rest, options);
  if (!made.ok()) return made.status();
  client = *std::move(made);
  if (namespace_flag.empty() && !rest.namespace_named) {
    // The cluster's hint for users whose context names no namespace; a
    // ConfigMap that cannot be read or used leaves "default".
    absl::StatusOr<ClusterDefaults> defaults = ReadClusterDefaults(*client);
    if (defaults.ok()) {
      if (!defaults->namespace_name.empty()) namespace_name = defaults->namespace_name;
      cluster_defaults = std::make_shared<const ClusterDefaults>(*std::move(defaults));
    }
  }
  return absl::OkStatus();
}

std::string Context::Env(const std::string& name, const std::string& fallback) const {
  std::optional<std::string> value = getenv(name);
  return value && !value->empty() ? *value : fallback;
}

absl::StatusOr<ParsedFlags> ParseCommandFlags(const std::vector<std::string>& args,
                                              std::vector<FlagSpec> specs,
                                              const std::string& command, Context& ctx) {
  for (const FlagSpec& g : GlobalFlags()) specs.push_back(g);
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, specs, command);
  if (!flags.ok()) return flags.status();
  if (auto v = flags->Value("kubeconfig")) ctx.kubeconfig = *v;
  if (auto v = flags->Value("context")) ctx.kube_context = *v;
  if (auto v = flags->Value("namespace")) {
    if (v->empty()) return absl::InvalidArgumentError("-n/--namespace is empty");
    ctx.namespace_flag = *v;
  }
  if (auto v = flags->Value("output")) {
    if (*v != "json" && *v != "yaml" && *v != "wide") {
      return absl::InvalidArgumentError(
          StrCat("-o/--output '", *v, "' is not one of json, yaml, wide"));
    }
    ctx.output = *v;
  }
  if (flags->Has("no-color")) ctx.no_color = true;
  return flags;
}

namespace {

// Marks a status Explain() reworded: the reworded one has no API reason, and
// an unreachable server's would be prefixed again at every level that
// explains it (issue 33: "cannot reach ...: cannot reach ...: cannot list").
constexpr char kExplainedPayload[] = "k8shazgpu.canhazgpu.dev/explained";
constexpr char kCannotReach[] = "cannot reach the API server ";

absl::Status Explained(absl::Status status) {
  status.SetPayload(kExplainedPayload, absl::Cord("1"));
  return status;
}

absl::Status Reworded(const absl::Status& status, const Context& ctx);

}  // namespace

absl::Status Explain(const absl::Status& status, const Context& ctx) {
  if (status.ok() || status.GetPayload(kExplainedPayload)) return status;
  return Explained(Reworded(status, ctx));
}

namespace {

absl::Status Reworded(const absl::Status& status, const Context& ctx) {
  const std::string reason = kube::ReasonOf(status);
  const std::string message(status.message());
  if (reason == "Forbidden") {
    // The client's line already reads "cannot VERB RESOURCE ... in
    // namespace NS: Forbidden: ..."; say what to do about it.
    return absl::PermissionDeniedError(
        StrCat(message, " (no RBAC permission for that verb on that resource as ",
               ctx.rest.context.empty() ? std::string("this user") : "context " + ctx.rest.context,
               "; ask a cluster admin for a Role that allows it)"));
  }
  if (reason == "NotFound" && message.find(StrCat("namespaces \"", ctx.namespace_name,
                                                  "\" not found")) != std::string::npos) {
    return absl::NotFoundError(StrCat("namespace '", ctx.namespace_name,
                                      "' does not exist; name another with -n/--namespace"));
  }
  // Only a command that connected can have failed to reach the server:
  // vllm unpack, say, never does, and its errors are about local files.
  const bool connected = ctx.client != nullptr;
  // A status rebuilt around an explained message (", pod NAME" added) lost
  // the mark; its message still says it.
  const bool said = message.find(kCannotReach) != std::string::npos;
  if (connected && reason.empty() && !said &&
      (absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status))) {
    return absl::UnavailableError(StrCat(
        kCannotReach, ctx.rest.server, " (", ctx.rest.source,
        ctx.rest.context.empty() ? std::string() : ", context " + ctx.rest.context,
        "; gave up after ", kRequestRetries + 1, " tries of at most ",
        ctx.request_timeout.count() % 1000 == 0 ? StrCat(ctx.request_timeout.count() / 1000, " s")
                                                : StrCat(ctx.request_timeout.count(), " ms"),
        "): ", message));
  }
  return status;
}

}  // namespace

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "k8shazgpu: %s\n", std::string(status.message()).c_str());
  return ExitCodeFor(status);
}

int RunCommandBody(Context& ctx, const std::vector<std::string>& args, std::vector<FlagSpec> specs,
                   const std::string& command, const CommandBody& body) {
  absl::StatusOr<ParsedFlags> flags = ParseCommandFlags(args, std::move(specs), command, ctx);
  if (!flags.ok()) return Fail(flags.status());
  absl::StatusOr<int> code = body(ctx, *flags);
  if (!code.ok()) return Fail(Explain(code.status(), ctx));
  return *code;
}

}  // namespace canhazgpu::cli::k8s
