// The dashboard's page, script and style sheet, compiled into the binary
// from src/web/assets/ (cmake/EmbedAssets.cmake).
#pragma once

#include <string_view>
#include <vector>

namespace canhazgpu::web {

struct Asset {
  std::string_view path;  // "/app.js"
  std::string_view content;
};

const std::vector<Asset>& Assets();

}  // namespace canhazgpu::web
