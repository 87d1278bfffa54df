// The official CDI schema's verdict on a spec, for the driver's tests:
// tests/schema/validate_cdi_spec.py (python3-jsonschema) against
// tests/fixtures/cdi. Needs TESTS_DIR defined by the test target.
#pragma once

#include <cstdio>
#include <fstream>
#include <string>

#include "nlohmann/json.hpp"

namespace canhazgpu::driver::testing {

// "" when `spec` is valid; else what the validator says. `scratch_dir`
// holds the file it checks.
inline std::string CdiSchemaErrors(const nlohmann::json& spec, const std::string& scratch_dir) {
  const std::string file = scratch_dir + "/spec-to-check.json";
  std::ofstream(file) << spec.dump();
  const std::string command = std::string("python3 ") + TESTS_DIR +
                              "/schema/validate_cdi_spec.py " + TESTS_DIR + "/fixtures/cdi " +
                              file + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "cannot run the validator";
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof(buf), pipe) != nullptr) out += buf;
  const int rc = pclose(pipe);
  return rc == 0 ? "" : out.empty() ? "validator failed" : out;
}

}  // namespace canhazgpu::driver::testing
