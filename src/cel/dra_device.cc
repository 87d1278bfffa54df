#include "cel/dra_device.h"

namespace canhazgpu::cel {
namespace {

// Keys are pooled (Value::Key): every device has the same few, and the
// evaluator's attribute chains recognise them by address.
Value GroupByDomain(std::string_view driver,
                    const std::vector<std::pair<std::string, Value>>& entries) {
  std::vector<std::pair<std::string, MapData>> domains;
  for (const auto& [qualified, value] : entries) {
    size_t slash = qualified.find('/');
    std::string domain =
        slash == std::string::npos ? std::string(driver) : qualified.substr(0, slash);
    std::string id = slash == std::string::npos ? qualified : qualified.substr(slash + 1);
    MapData* map = nullptr;
    for (auto& [name, data] : domains) {
      if (name == domain) map = &data;
    }
    if (map == nullptr) map = &domains.emplace_back(domain, MapData{}).second;
    map->entries.emplace_back(Value::Key(id), value);
  }
  MapData outer;
  outer.missing_key_is_empty_map = true;
  for (auto& [name, data] : domains)
    outer.entries.emplace_back(Value::Key(name), Value::Map(std::move(data)));
  return Value::Map(std::move(outer));
}

}  // namespace

Value MakeDraDevice(std::string_view driver,
                    const std::vector<std::pair<std::string, Value>>& attributes,
                    const std::vector<std::pair<std::string, Value>>& capacity) {
  MapData device;
  device.entries.emplace_back(Value::Key("driver"), Value::String(std::string(driver)));
  device.entries.emplace_back(Value::Key("attributes"), GroupByDomain(driver, attributes));
  device.entries.emplace_back(Value::Key("capacity"), GroupByDomain(driver, capacity));
  return Value::Map(std::move(device));
}

}  // namespace canhazgpu::cel
