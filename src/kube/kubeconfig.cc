#include "kube/kubeconfig.h"

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "core/file_read.h"
#include "core/status_macros.h"
#include "core/strings.h"
#include "nlohmann/json.hpp"
#include "yaml/yaml_json.h"

namespace canhazgpu::kube {
namespace {

using nlohmann::json;

// The parts of a kubeconfig we resolve, each remembering its file so that
// relative paths and messages refer to it.
struct Cluster {
  std::string file;
  std::string server;
  std::string ca_file;
  std::string ca_data;
  bool insecure = false;
  std::string tls_server_name;
};

struct User {
  std::string file;
  std::string cert_file, cert_data, key_file, key_data;
  std::string token, token_file;
  std::string username, password;
  std::optional<ExecConfig> exec;
  std::string auth_provider;
};

struct Context {
  std::string file;
  std::string cluster, user, namespace_name;
};

struct Merged {
  std::string current_context;
  std::map<std::string, Cluster> clusters;
  std::map<std::string, Context> contexts;
  std::map<std::string, User> users;
  std::vector<std::string> files;  // those read, in order
};

absl::Status FileError(const std::string& file, int line, const std::string& what) {
  if (line == 0) return absl::InvalidArgumentError(StrCat("kubeconfig ", file, ": ", what));
  return absl::InvalidArgumentError(StrCat("kubeconfig ", file, ":", line, ": ", what));
}

// One kubeconfig file read as JSON (every scalar as written), and where in
// the file each value is, for messages.
class FileView {
 public:
  FileView(const std::string& file, const yaml::Document& document)
      : file_(file), document_(document) {}

  const std::string& file() const { return file_; }

  absl::Status Error(const std::string& pointer, const std::string& what) const {
    return FileError(file_, document_.LineOf(pointer), what);
  }

 private:
  const std::string& file_;
  const yaml::Document& document_;
};

// A value of the file and its JSON pointer.
struct ConfigNode {
  const json& value;
  std::string pointer;

  // The member `key`, null when absent (or when this is not a map).
  ConfigNode operator[](const std::string& key) const {
    static const json kAbsent;
    const std::string at = StrCat(pointer, "/", yaml::PointerToken(key));
    if (!value.is_object()) return {kAbsent, at};
    auto it = value.find(key);
    return {it == value.end() ? kAbsent : *it, at};
  }
};

// `node[key]` as a string; empty when absent. A value of another type is an
// error naming the key.
absl::StatusOr<std::string> Text(const FileView& file, const ConfigNode& node, const char* key) {
  const ConfigNode value = node[key];
  if (value.value.is_null()) return std::string();
  if (!value.value.is_string())
    return file.Error(value.pointer, StrCat(key, ": expected a string"));
  return value.value.get<std::string>();
}

absl::StatusOr<bool> Flag(const FileView& file, const ConfigNode& node, const char* key) {
  const ConfigNode value = node[key];
  if (value.value.is_null()) return false;
  std::optional<bool> b;
  if (value.value.is_string()) b = yaml::BoolOf(value.value.get<std::string>());
  if (!b) return file.Error(value.pointer, StrCat(key, ": expected true or false"));
  return *b;
}

std::string Resolve(const std::string& file, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  return (std::filesystem::path(file).parent_path() / path).lexically_normal().string();
}

absl::Status ParseExecList(const FileView& file, const ConfigNode& node, ExecConfig& exec) {
  if (const ConfigNode args = node["args"]; !args.value.is_null()) {
    if (!args.value.is_array()) return file.Error(args.pointer, "exec: args: expected a list");
    for (size_t i = 0; i < args.value.size(); ++i) {
      if (!args.value[i].is_string()) {
        return file.Error(StrCat(args.pointer, "/", i), "exec: args: expected strings");
      }
      exec.args.push_back(args.value[i].get<std::string>());
    }
  }
  if (const ConfigNode env = node["env"]; !env.value.is_null()) {
    if (!env.value.is_array()) return file.Error(env.pointer, "exec: env: expected a list");
    for (size_t i = 0; i < env.value.size(); ++i) {
      const ConfigNode var{env.value[i], StrCat(env.pointer, "/", i)};
      if (!var.value.is_object())
        return file.Error(var.pointer, "exec: env: expected {name, value}");
      ASSIGN_OR_RETURN(std::string name, Text(file, var, "name"));
      ASSIGN_OR_RETURN(std::string value, Text(file, var, "value"));
      exec.env.emplace_back(std::move(name), std::move(value));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ExecConfig> ParseExec(const FileView& file, const ConfigNode& node) {
  ExecConfig exec;
  ASSIGN_OR_RETURN(exec.api_version, Text(file, node, "apiVersion"));
  ASSIGN_OR_RETURN(exec.command, Text(file, node, "command"));
  if (exec.command.empty()) return file.Error(node.pointer, "exec: command is required");
  // kubectl resolves a command with a path separator against the file; a
  // bare name is looked up on PATH.
  if (exec.command.find('/') != std::string::npos)
    exec.command = Resolve(file.file(), exec.command);
  RETURN_IF_ERROR(ParseExecList(file, node, exec));
  ASSIGN_OR_RETURN(exec.install_hint, Text(file, node, "installHint"));
  ASSIGN_OR_RETURN(exec.provide_cluster_info, Flag(file, node, "provideClusterInfo"));
  ASSIGN_OR_RETURN(exec.interactive_mode, Text(file, node, "interactiveMode"));
  return exec;
}

// Each named entry of list `key` ({name, <inner>: {...}}), in order.
absl::Status ForEachNamed(
    const FileView& file, const ConfigNode& root, const char* key, const char* inner,
    const std::function<absl::Status(const std::string&, const ConfigNode&)>& visit) {
  const ConfigNode list = root[key];
  if (list.value.is_null()) return absl::OkStatus();
  if (!list.value.is_array()) return file.Error(list.pointer, StrCat(key, ": expected a list"));
  static const json kEmptyMap = json::object();
  for (size_t i = 0; i < list.value.size(); ++i) {
    const ConfigNode entry{list.value[i], StrCat(list.pointer, "/", i)};
    if (!entry.value.is_object())
      return file.Error(entry.pointer, StrCat(key, ": expected entries"));
    ASSIGN_OR_RETURN(std::string name, Text(file, entry, "name"));
    if (name.empty()) return file.Error(entry.pointer, StrCat(key, ": an entry has no name"));
    const ConfigNode body = entry[inner];
    if (!body.value.is_null() && !body.value.is_object()) {
      return file.Error(body.pointer, StrCat(key, " ", name, ": ", inner, ": expected a map"));
    }
    RETURN_IF_ERROR(visit(name, body.value.is_null() ? ConfigNode{kEmptyMap, body.pointer} : body));
  }
  return absl::OkStatus();
}

absl::Status MergeClusters(const FileView& file, const ConfigNode& root, Merged& out) {
  return ForEachNamed(file, root, "clusters", "cluster",
                      [&](const std::string& name, const ConfigNode& n) -> absl::Status {
                        if (out.clusters.contains(name)) return absl::OkStatus();
                        Cluster c{.file = file.file()};
                        ASSIGN_OR_RETURN(c.server, Text(file, n, "server"));
                        ASSIGN_OR_RETURN(c.ca_file, Text(file, n, "certificate-authority"));
                        ASSIGN_OR_RETURN(c.ca_data, Text(file, n, "certificate-authority-data"));
                        ASSIGN_OR_RETURN(c.insecure, Flag(file, n, "insecure-skip-tls-verify"));
                        ASSIGN_OR_RETURN(c.tls_server_name, Text(file, n, "tls-server-name"));
                        c.ca_file = Resolve(file.file(), c.ca_file);
                        out.clusters.emplace(name, std::move(c));
                        return absl::OkStatus();
                      });
}

absl::StatusOr<User> ParseUser(const FileView& file, const ConfigNode& n) {
  User u{.file = file.file()};
  ASSIGN_OR_RETURN(u.cert_file, Text(file, n, "client-certificate"));
  ASSIGN_OR_RETURN(u.cert_data, Text(file, n, "client-certificate-data"));
  ASSIGN_OR_RETURN(u.key_file, Text(file, n, "client-key"));
  ASSIGN_OR_RETURN(u.key_data, Text(file, n, "client-key-data"));
  ASSIGN_OR_RETURN(u.token, Text(file, n, "token"));
  ASSIGN_OR_RETURN(u.token_file, Text(file, n, "tokenFile"));
  ASSIGN_OR_RETURN(u.username, Text(file, n, "username"));
  ASSIGN_OR_RETURN(u.password, Text(file, n, "password"));
  u.cert_file = Resolve(file.file(), u.cert_file);
  u.key_file = Resolve(file.file(), u.key_file);
  u.token_file = Resolve(file.file(), u.token_file);
  if (const ConfigNode exec = n["exec"]; !exec.value.is_null()) {
    if (!exec.value.is_object()) return file.Error(exec.pointer, "exec: expected a map");
    ASSIGN_OR_RETURN(u.exec, ParseExec(file, exec));
  }
  if (const ConfigNode provider = n["auth-provider"]; provider.value.is_object()) {
    ASSIGN_OR_RETURN(u.auth_provider, Text(file, provider, "name"));
    if (u.auth_provider.empty()) u.auth_provider = "(unnamed)";
  }
  return u;
}

absl::Status MergeUsers(const FileView& file, const ConfigNode& root, Merged& out) {
  return ForEachNamed(file, root, "users", "user",
                      [&](const std::string& name, const ConfigNode& n) -> absl::Status {
                        if (out.users.contains(name)) return absl::OkStatus();
                        ASSIGN_OR_RETURN(User u, ParseUser(file, n));
                        out.users.emplace(name, std::move(u));
                        return absl::OkStatus();
                      });
}

absl::Status MergeContexts(const FileView& file, const ConfigNode& root, Merged& out) {
  return ForEachNamed(file, root, "contexts", "context",
                      [&](const std::string& name, const ConfigNode& n) -> absl::Status {
                        if (out.contexts.contains(name)) return absl::OkStatus();
                        Context c{.file = file.file()};
                        ASSIGN_OR_RETURN(c.cluster, Text(file, n, "cluster"));
                        ASSIGN_OR_RETURN(c.user, Text(file, n, "user"));
                        ASSIGN_OR_RETURN(c.namespace_name, Text(file, n, "namespace"));
                        out.contexts.emplace(name, std::move(c));
                        return absl::OkStatus();
                      });
}

// Merges `file` into `out`: what `out` already has wins (first file wins).
absl::Status MergeFile(const std::string& file, const std::string& text, Merged& out) {
  yaml::ReadError error;
  absl::StatusOr<yaml::Document> document =
      yaml::ReadDocument(text, {.scalars_as_text = true, .record_lines = true}, &error);
  if (!document.ok()) return FileError(file, error.line, error.message);
  out.files.push_back(file);
  const FileView view(file, *document);
  const ConfigNode root{document->value, ""};
  if (root.value.is_null()) return absl::OkStatus();  // an empty file
  if (!root.value.is_object()) return view.Error("", "expected a kubeconfig (a map)");
  ASSIGN_OR_RETURN(std::string current, Text(view, root, "current-context"));
  if (out.current_context.empty()) out.current_context = current;
  RETURN_IF_ERROR(MergeClusters(view, root, out));
  RETURN_IF_ERROR(MergeUsers(view, root, out));
  return MergeContexts(view, root, out);
}

absl::StatusOr<std::string> DecodeData(const std::string& file, const std::string& what,
                                       const std::string& data) {
  std::string decoded;
  if (!absl::Base64Unescape(data, &decoded)) {
    return absl::InvalidArgumentError(StrCat("kubeconfig ", file, ": ", what, ": not base64"));
  }
  return decoded;
}

// The PEM from `data` (base64) or `path`, data first as kubectl does.
absl::StatusOr<std::string> Pem(const std::string& file, const std::string& what,
                                const std::string& data, const std::string& path) {
  if (!data.empty()) return DecodeData(file, what, data);
  if (path.empty()) return std::string();
  absl::StatusOr<std::string> pem = ReadRegularFile(path, kMaxCredentialFileBytes, what);
  if (!pem.ok()) {
    return absl::InvalidArgumentError(StrCat("kubeconfig ", file, ": ", pem.status().message()));
  }
  return pem;
}

bool IsEmpty(const Merged& m) {
  return m.current_context.empty() && m.contexts.empty() && m.clusters.empty() && m.users.empty();
}

std::string Sources(const Merged& m) {
  std::string out;
  for (const std::string& f : m.files) out += (out.empty() ? "" : ":") + f;
  return out.empty() ? "no kubeconfig file" : out;
}

// The kubeconfig files that `options` name, merged as kubectl merges them.
absl::StatusOr<Merged> ReadKubeconfigs(const LoadOptions& options) {
  Merged merged;
  if (!options.kubeconfig_flag.empty()) {
    ASSIGN_OR_RETURN(std::string text,
                     ReadRegularFile(options.kubeconfig_flag, kMaxKubeconfigBytes, "kubeconfig"));
    RETURN_IF_ERROR(MergeFile(options.kubeconfig_flag, text, merged));
  } else if (options.kubeconfig_env && !options.kubeconfig_env->empty()) {
    std::set<std::string> seen;
    for (std::string_view part : Split(*options.kubeconfig_env, ':')) {
      const std::string path(part);
      if (path.empty() || !seen.insert(path).second) continue;
      absl::StatusOr<std::string> text = ReadRegularFile(path, kMaxKubeconfigBytes, "kubeconfig");
      if (absl::IsNotFound(text.status())) continue;  // kubectl skips missing files
      if (!text.ok()) return text.status();
      RETURN_IF_ERROR(MergeFile(path, *text, merged));
    }
  } else if (!options.home.empty()) {
    const std::string path = options.home + "/.kube/config";
    absl::StatusOr<std::string> text = ReadRegularFile(path, kMaxKubeconfigBytes, "kubeconfig");
    if (text.ok()) {
      RETURN_IF_ERROR(MergeFile(path, *text, merged));
    } else if (!absl::IsNotFound(text.status())) {
      return text.status();
    }
  }

  return merged;
}

// Why no kubeconfig file was read: the files looked for, and where their
// names came from (a KUBECONFIG naming a missing file is skipped silently,
// as kubectl does, so this is the only place that names it).
std::string NoKubeconfig(const LoadOptions& options) {
  const std::string hint = "; name one with --kubeconfig or KUBECONFIG";
  if (options.kubeconfig_env && !options.kubeconfig_env->empty()) {
    const bool several = options.kubeconfig_env->find(':') != std::string::npos;
    return StrCat("no kubeconfig file: KUBECONFIG names ", *options.kubeconfig_env,
                  several ? ", none of which exists" : ", which does not exist", hint);
  }
  if (!options.home.empty()) {
    return StrCat("no kubeconfig file: ", options.home,
                  "/.kube/config does not exist and KUBECONFIG is not set", hint);
  }
  return StrCat("no kubeconfig file: neither KUBECONFIG nor HOME is set, and this is not a pod",
                hint);
}

// The credentials of the context's user into `config`.
absl::Status AddUserCredentials(const Merged& merged, const std::string& context_name,
                                const Context& ctx, RestConfig* config) {
  auto user = merged.users.find(ctx.user);
  if (user == merged.users.end()) {
    return absl::NotFoundError(StrCat("context \"", context_name, "\" (", ctx.file,
                                      ") names user \"", ctx.user, "\", which is not in ",
                                      Sources(merged)));
  }
  const User& u = user->second;
  if (!u.auth_provider.empty()) {
    return absl::InvalidArgumentError(
        StrCat("kubeconfig ", u.file, ": user \"", ctx.user, "\" uses the auth-provider \"",
               u.auth_provider,
               "\", which kubectl removed in 1.26; use an exec credential plugin instead "
               "(for GKE: gke-gcloud-auth-plugin, for AKS: kubelogin)"));
  }
  ASSIGN_OR_RETURN(config->client_cert_pem,
                   Pem(u.file, "client-certificate", u.cert_data, u.cert_file));
  ASSIGN_OR_RETURN(config->client_key_pem, Pem(u.file, "client-key", u.key_data, u.key_file));
  if (config->client_cert_pem.empty() != config->client_key_pem.empty()) {
    return absl::InvalidArgumentError(StrCat("kubeconfig ", u.file, ": user \"", ctx.user,
                                             "\" has a client certificate without its key, "
                                             "or a key without its certificate"));
  }
  config->token = u.token;
  config->token_file = u.token_file;
  config->username = u.username;
  config->password = u.password;
  config->exec = u.exec;
  if (!config->username.empty() && (!config->token.empty() || !config->token_file.empty())) {
    return absl::InvalidArgumentError(StrCat("kubeconfig ", u.file, ": user \"", ctx.user,
                                             "\" sets both basic auth and a token"));
  }
  return absl::OkStatus();
}

}  // namespace

LoadOptions LoadOptions::FromProcess(std::string kubeconfig_flag, std::string context_flag) {
  LoadOptions o;
  o.kubeconfig_flag = std::move(kubeconfig_flag);
  o.context_flag = std::move(context_flag);
  if (const char* v = getenv("KUBECONFIG")) o.kubeconfig_env = v;
  if (const char* v = getenv("HOME")) o.home = v;
  if (const char* v = getenv("KUBERNETES_SERVICE_HOST")) o.service_host = v;
  if (const char* v = getenv("KUBERNETES_SERVICE_PORT")) o.service_port = v;
  return o;
}

absl::StatusOr<RestConfig> InClusterConfig(const LoadOptions& options) {
  if (options.service_host.empty() || options.service_port.empty()) {
    return absl::FailedPreconditionError(
        "not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set; "
        "use --kubeconfig or KUBECONFIG");
  }
  RestConfig config;
  const bool ipv6 = options.service_host.find(':') != std::string::npos;
  config.server = StrCat("https://", ipv6 ? "[" : "", options.service_host, ipv6 ? "]" : "", ":",
                         options.service_port);
  const std::string dir = options.service_account_dir;
  config.token_file = dir + "/token";
  // Read once now so that a pod without a mounted token says so at start.
  ASSIGN_OR_RETURN(config.token, ReadRegularFile(config.token_file, kMaxCredentialFileBytes,
                                                 "service-account token"));
  ASSIGN_OR_RETURN(config.ca_pem,
                   ReadRegularFile(dir + "/ca.crt", kMaxCredentialFileBytes, "service-account CA"));
  absl::StatusOr<std::string> ns =
      ReadRegularFile(dir + "/namespace", kMaxCredentialFileBytes, "service-account namespace");
  if (ns.ok() && !ns->empty()) {
    config.namespace_name = std::string(absl::StripAsciiWhitespace(*ns));
    config.namespace_named = true;
  }
  config.source = "in-cluster";
  return config;
}

absl::StatusOr<RestConfig> LoadRestConfig(const LoadOptions& options) {
  ASSIGN_OR_RETURN(Merged merged, ReadKubeconfigs(options));

  if (IsEmpty(merged) && options.context_flag.empty() && options.kubeconfig_flag.empty() &&
      !options.service_host.empty()) {
    return InClusterConfig(options);
  }
  if (merged.files.empty()) return absl::FailedPreconditionError(NoKubeconfig(options));

  const std::string& context_name =
      options.context_flag.empty() ? merged.current_context : options.context_flag;
  if (context_name.empty()) {
    return absl::FailedPreconditionError(
        StrCat("no current context in ", Sources(merged),
               "; choose one with --context or `kubectl config use-context`"));
  }
  auto context = merged.contexts.find(context_name);
  if (context == merged.contexts.end()) {
    return absl::NotFoundError(
        StrCat("context \"", context_name, "\" is not in ", Sources(merged)));
  }
  const Context& ctx = context->second;
  auto cluster = merged.clusters.find(ctx.cluster);
  if (ctx.cluster.empty() || cluster == merged.clusters.end()) {
    return absl::NotFoundError(StrCat("context \"", context_name, "\" (", ctx.file,
                                      ") names cluster \"", ctx.cluster, "\", which is not in ",
                                      Sources(merged)));
  }
  const Cluster& c = cluster->second;
  if (c.server.empty()) {
    return absl::InvalidArgumentError(
        StrCat("kubeconfig ", c.file, ": cluster \"", ctx.cluster, "\" has no server"));
  }
  RestConfig config;
  config.context = context_name;
  config.source = Sources(merged);
  config.server = c.server;
  while (config.server.size() > 1 && config.server.back() == '/') config.server.pop_back();
  config.insecure_skip_tls_verify = c.insecure;
  config.tls_server_name = c.tls_server_name;
  if (c.insecure && (!c.ca_file.empty() || !c.ca_data.empty())) {
    return absl::InvalidArgumentError(
        StrCat("kubeconfig ", c.file, ": cluster \"", ctx.cluster,
               "\" sets both a certificate authority and insecure-skip-tls-verify"));
  }
  ASSIGN_OR_RETURN(config.ca_pem, Pem(c.file, "certificate-authority", c.ca_data, c.ca_file));
  if (!ctx.namespace_name.empty()) {
    config.namespace_name = ctx.namespace_name;
    config.namespace_named = true;
  }

  if (ctx.user.empty()) return config;  // anonymous
  RETURN_IF_ERROR(AddUserCredentials(merged, context_name, ctx, &config));
  return config;
}

}  // namespace canhazgpu::kube
