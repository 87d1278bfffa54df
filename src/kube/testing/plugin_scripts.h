// Exec credential plugins for tests: small /bin/sh scripts written into a
// temporary directory (removed with it), and the ExecCredential JSON they
// print. A script keeps its traces (runs, arguments, environment) as files
// in the same directory for the test to read. Not thread-safe.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "nlohmann/json.hpp"

namespace canhazgpu::kube {

class PluginScripts {
 public:
  PluginScripts() {
    char tmpl[] = "/tmp/kube_exec.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) abort();
    dir_ = tmpl;
  }
  ~PluginScripts() { std::filesystem::remove_all(dir_); }
  PluginScripts(const PluginScripts&) = delete;
  PluginScripts& operator=(const PluginScripts&) = delete;

  const std::string& dir() const { return dir_; }

  // Writes an executable script `name` that runs `body` with DIR set to
  // dir(); returns its path.
  std::string Write(const std::string& name, const std::string& body) const {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\nDIR='" << dir_ << "'\n" << body << "\n";
    chmod(path.c_str(), 0755);
    return path;
  }

  // A script that counts its runs in the file "runs" (one line each) and
  // prints `output`.
  std::string Printing(const std::string& name, const std::string& output) const {
    return Write(name, "echo run >> \"$DIR/runs\"\ncat <<'CREDENTIAL'\n" + output + "\nCREDENTIAL");
  }

  // The contents of the file `name` in dir(); "" when it does not exist.
  std::string Read(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // How often a Printing script has run.
  int Runs() const {
    const std::string runs = Read("runs");
    return static_cast<int>(std::count(runs.begin(), runs.end(), '\n'));
  }

 private:
  std::string dir_;
};

// What a plugin prints: an ExecCredential of `api_version` with `status`.
inline std::string CredentialJson(const std::string& api_version, const nlohmann::json& status) {
  return nlohmann::json{{"kind", "ExecCredential"}, {"apiVersion", api_version}, {"status", status}}
      .dump();
}

}  // namespace canhazgpu::kube
