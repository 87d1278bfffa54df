// k8shazgpu completion bash|zsh: shell completion made from the command
// table (cli/common/completion.h), with node, class and namespace names
// asked of the cluster when a flag wants one; `k8shazgpu manpage` (hidden)
// prints the man page, made at build time.
#include <cstdio>

#include "cli/common/completion.h"
#include "cli/k8shazgpu/commands.h"
#include "core/status_macros.h"
#include "core/strings.h"

namespace canhazgpu::cli::k8s {
namespace {

// The words `completion` takes beside the shells: what a flag's values are
// listed by, and the resource they are the names of.
struct NameList {
  const char* word;
  const char* flag;
  const kube::ResourceRef* resource;
};
constexpr NameList kNameLists[] = {
    {"nodes", "node", &kube::kNodes},
    {"classes", "class", &kube::kDeviceClasses},
    {"namespaces", "namespace", &kube::kNamespaces},
};

ProgramSpec Program() {
  ProgramSpec program{.name = "k8shazgpu"};
  for (const CommandSpec& c : Commands()) {
    if (c.hidden) continue;
    CommandDoc command{.name = c.name,
                       .summary = c.summary,
                       .usage = c.usage,
                       .flags = c.flags,
                       .runs_command = c.usage.find("-- ") != std::string::npos};
    if (c.name == "completion") command.words = {"bash", "zsh"};
    if (c.name == "cache") command.words = {"plan", "status", "add", "remove", "update"};
    program.commands.push_back(std::move(command));
  }
  program.global_flags = GlobalFlags();
  program.dynamic = [](const FlagSpec& f) {
    for (const NameList& list : kNameLists)
      if (f.name == list.flag) return std::string(list.word);
    return std::string();
  };
  return program;
}

// The names of a resource, one per line; quiet (and empty) on failure, as
// a completion must not print errors into the command line.
absl::Status PrintNames(Context& ctx, const kube::ResourceRef& resource) {
  RETURN_IF_ERROR(ctx.Connect());
  ASSIGN_OR_RETURN(nlohmann::json list, ctx.client->ListAll(resource, ""));
  for (const nlohmann::json& item : list["items"]) {
    std::printf("%s\n", item.value("/metadata/name"_json_pointer, std::string()).c_str());
  }
  return absl::OkStatus();
}

std::string ManPageRoff() {
  ManPageText text;
  text.title = "K8SHAZGPU";
  text.source = StrCat("k8shazgpu ", CANHAZGPU_VERSION_TEXT);
  text.name_line = "k8shazgpu \\- GPUs in a Kubernetes cluster without YAML, and why you wait";
  text.description =
      "k8shazgpu runs a command in a pod with GPUs of the cluster, through Dynamic Resource "
      "Allocation (any GPU DRA driver: canhazgpu's or NVIDIA's), streams its output and "
      "returns its exit code; while it waits it says where it stands in line and why, with "
      "the allocator's explanation over the whole cluster. \\fBstatus\\fR, \\fBqueue\\fR and "
      "\\fBexplain\\fR show who holds which GPU and why a pod waits.\n";
  text.trailing = R"sh(.SH ENVIRONMENT
\fBKUBECONFIG\fR as kubectl reads it; \fBK8SHAZGPU_IMAGE\fR, \fBK8SHAZGPU_VLLM_IMAGE\fR the
default images; \fBK8SHAZGPU_REQUEST_TIMEOUT_MS\fR bounds each request to the API server.
.SH EXIT STATUS
0 success; 1 runtime error (a request no node could ever hold, the API server refused);
2 bad flag or value (nothing created);
\fBrun\fR exits with its container's status, 128+N when a signal N ended it.
)sh";
  return ManPage(Program(), text);
}

}  // namespace

int CompletionCommand(Context& ctx, const Args& args) {
  return RunCommandBody(
      ctx, args, {}, "completion", [](Context& c, const ParsedFlags& flags) -> absl::StatusOr<int> {
        const std::string what = flags.positional.size() == 1 ? flags.positional[0] : "";
        std::string out;
        if (what == "bash") {
          out = BashCompletion(Program());
        } else if (what == "zsh") {
          out = ZshCompletion(Program());
        } else {
          for (const NameList& list : kNameLists) {
            if (what == list.word) return PrintNames(c, *list.resource).ok() ? 0 : 1;
          }
          return absl::InvalidArgumentError("usage: k8shazgpu completion bash|zsh");
        }
        std::fwrite(out.data(), 1, out.size(), stdout);
        return 0;
      });
}

int ManpageCommand(Context& ctx, const Args& args) {
  return RunCommandBody(ctx, args, {}, "manpage",
                        [](Context&, const ParsedFlags& flags) -> absl::StatusOr<int> {
                          if (!flags.positional.empty())
                            return absl::InvalidArgumentError("usage: k8shazgpu manpage");
                          const std::string out = ManPageRoff();
                          std::fwrite(out.data(), 1, out.size(), stdout);
                          return 0;
                        });
}

}  // namespace canhazgpu::cli::k8s
