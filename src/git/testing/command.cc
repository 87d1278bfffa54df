#include "git/testing/command.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

extern char** environ;

namespace canhazgpu::git::testing {
namespace {

std::string TempFile(const std::string& contents) {
  std::string path = (std::filesystem::temp_directory_path() / "git_testing_XXXXXX").string();
  int fd = mkstemp(path.data());
  if (fd < 0) return "";
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  return path;
}

std::string ReadAndRemove(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path.c_str());
  return text.str();
}

}  // namespace

CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& input,
                         const std::filesystem::path& cwd) {
  // Files, not pipes: nothing can deadlock on a full pipe, and the tests'
  // payloads are small.
  const std::string in = TempFile(input), out = TempFile(""), err = TempFile("");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_TRUNC, 0);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  CommandResult result;
  if (posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ) == 0) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  }
  posix_spawn_file_actions_destroy(&actions);
  std::remove(in.c_str());
  result.out = ReadAndRemove(out);
  result.err = ReadAndRemove(err);
  return result;
}

std::string Git(const std::filesystem::path& cwd, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"env",
                                   "GIT_CONFIG_NOSYSTEM=1",
                                   "GIT_CONFIG_GLOBAL=/dev/null",
                                   "git",
                                   "-c",
                                   "user.name=Test",
                                   "-c",
                                   "user.email=test@example.com",
                                   "-c",
                                   "init.defaultBranch=main",
                                   "-c",
                                   "core.autocrlf=false"};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult result = RunCommand(argv, "", cwd);
  if (result.exit_code != 0) {
    std::cerr << "git";
    for (const std::string& arg : args) std::cerr << " " << arg;
    std::cerr << " in " << cwd << " failed (" << result.exit_code << "): " << result.err << "\n";
    std::abort();
  }
  return result.out;
}

}  // namespace canhazgpu::git::testing
