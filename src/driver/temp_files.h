// The temporary files a killed write leaves behind. WriteFileAtomically
// writes "<name>.tmp.<pid>" (before issue 29) or ".<name>.tmp.<random>"
// (since) beside the file it replaces and renames it over; a daemon killed
// in between (the OOM killer, a node drain) leaves the temporary file for
// good. The node driver sweeps those of its own files when it starts,
// before anything of its own writes there. Stateless; thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace canhazgpu::driver {

// The name of the file that `name` is a temporary file of, or nullopt when
// `name` is not one.
std::optional<std::string> TempFileTarget(std::string_view name);

// Removes each regular file in `dir` that is a temporary file of a name
// `ours` accepts; nothing else is touched. Returns a line for each one that
// could not be removed (a missing `dir` has none).
std::vector<std::string> SweepTempFiles(const std::string& dir,
                                        const std::function<bool(std::string_view)>& ours);

}  // namespace canhazgpu::driver
