// libFuzzer target: CachePlan items as a node agent reads them from the API
// server (any JSON a plan's author could write). An item with a wrongly
// typed field is refused with one line; validation answers in one line; an
// item valid on a node that refuses local repositories names no file:// URL
// and no path; a valid item survives a round trip through JSON; the default
// name is always a valid item name.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cacheplan/types.h"
#include "cacheplan/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace canhazgpu::cacheplan;
  if (size > 64 * 1024) return 0;
  const nlohmann::json items = nlohmann::json::parse(reinterpret_cast<const char*>(data),
                                                     reinterpret_cast<const char*>(data) + size,
                                                     /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (items.is_discarded()) return 0;
  for (const nlohmann::json& j : items.is_array() ? items : nlohmann::json::array({items})) {
    absl::StatusOr<CacheItem> read = ItemFromJson(j);
    if (!read.ok() && std::string(read.status().message()).find('\n') != std::string::npos) {
      std::abort();
    }
  }
  for (const CacheItem& item :
       ItemsFromJson(items.is_array() ? items : nlohmann::json::array({items}))) {
    const absl::Status strict = ValidateItem(item);
    const absl::Status lenient = ValidateItem(item, {.allow_local_git = true});
    for (const absl::Status* s : {&strict, &lenient}) {
      if (!s->ok() && std::string(s->message()).find('\n') != std::string::npos) std::abort();
    }
    // Stricter rules never accept more.
    if (strict.ok() && !lenient.ok()) std::abort();
    if (strict.ok() && item.git_repo &&
        (item.git_repo->url.starts_with("file:") || item.git_repo->url.starts_with("/"))) {
      std::abort();
    }
    if (strict.ok()) {
      absl::StatusOr<CacheItem> again = ItemFromJson(ItemToJson(item));
      if (!again.ok() || !(*again == item)) std::abort();
    }
    if (!IsItemName(DefaultItemName(item))) std::abort();
  }
  return 0;
}
