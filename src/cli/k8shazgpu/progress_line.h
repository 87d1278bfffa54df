// The line a waiting command shows on stderr (run's "waiting for 1 GPU",
// vllm run's cache progress): redrawn in place on a terminal, one plain
// "k8shazgpu: ..." line per change otherwise, so stdout carries only the
// command's output. One thread.
#pragma once

#include <string>

namespace canhazgpu::cli::k8s {

class ProgressLine {
 public:
  explicit ProgressLine(bool tty) : tty_(tty) {}
  ~ProgressLine() { Clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Shows `line` unless it is the one shown; cut to the terminal's width.
  void Show(const std::string& line);
  // Erases the line on a terminal, so that what follows starts clean.
  void Clear();

 private:
  const bool tty_;
  bool shown_ = false;
  std::string last_;
};

}  // namespace canhazgpu::cli::k8s
