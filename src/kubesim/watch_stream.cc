// Watch streams: the chunked JSON event stream, from a resourceVersion or
// from the current state (as ADDED events), with bookmarks, the event window
// (410 Gone as an ERROR event) and DropWatches().
#include <algorithm>
#include <chrono>

#include "core/strings.h"
#include "kubesim/api_server.h"
#include "kubesim/http_common.h"
#include "kubesim/table.h"

namespace canhazgpu::kubesim {

using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

namespace {

// Where a watch starts: after `rv_text`, or when that is empty or "0" after
// everything now, which comes first as ADDED events into `*initial`.
absl::StatusOr<int64_t> WatchStart(const ObjectStore& store, const ResourceType& type,
                                   const std::string& ns, const ListOptions& options,
                                   const std::string& rv_text, std::vector<WatchEvent>* initial) {
  if (rv_text.empty() || rv_text == "0") {
    Outcome list = store.List(type, ns, options);
    const int64_t after = std::stoll(list.object["metadata"]["resourceVersion"].get<std::string>());
    for (json& item : list.object["items"])
      initial->push_back({"ADDED", after, type.key(), "", std::move(item)});
    return after;
  }
  char* end = nullptr;
  const int64_t after = std::strtoll(rv_text.c_str(), &end, 10);
  if (*end != '\0' || after < 0) {
    return absl::InvalidArgumentError(StrCat("invalid resourceVersion: ", rv_text));
  }
  return after;
}

// When the watch ends: after ?timeoutSeconds, 30 minutes without.
SteadyClock::time_point WatchDeadline(const httplib::Request& req) {
  const std::string timeout_text = Param(req, "timeoutSeconds");
  const int timeout = timeout_text.empty() ? 1800 : std::max(1, std::atoi(timeout_text.c_str()));
  return SteadyClock::now() + std::chrono::seconds(timeout);
}

// One line of the stream; `older`, when not empty, is the resource.k8s.io
// version that the object is converted to.
std::string WatchEventLine(const json& event, const std::string& older) {
  if (older.empty()) return event.dump() + "\n";
  json converted = event;
  converted["object"] = DraFromV1(older, std::move(converted["object"]));
  return converted.dump() + "\n";
}

// The 410 that ends a watch whose version left the event window.
json ExpiredEvent(int64_t watched_version, int64_t current_version) {
  kube::ApiStatus gone{
      .code = 410,
      .reason = "Expired",
      .message = StrCat("too old resource version: ", watched_version, " (", current_version, ")")};
  return {{"type", "ERROR"}, {"object", gone.ToJson()}};
}

json BookmarkEvent(const ResourceType& type, int64_t resource_version) {
  return {{"type", "BOOKMARK"},
          {"object",
           {{"kind", type.kind},
            {"apiVersion", type.api_version()},
            {"metadata", {{"resourceVersion", std::to_string(resource_version)}}}}}};
}

}  // namespace

void ApiServer::HandleWatch(const ResourceType& type, const Route& route,
                            const httplib::Request& req, httplib::Response& res) {
  absl::StatusOr<ListOptions> options = SelectorsOf(type, req);
  if (!options.ok())
    return Fail(res, kube::BadRequestStatus(std::string(options.status().message())));
  std::vector<WatchEvent> initial;
  absl::StatusOr<int64_t> after =
      WatchStart(store_, type, route.ns, *options, Param(req, "resourceVersion"), &initial);
  if (!after.ok()) return Fail(res, kube::BadRequestStatus(std::string(after.status().message())));
  const bool bookmarks = BoolParam(req, "allowWatchBookmarks");
  const auto deadline = WatchDeadline(req);
  const ResourceType watched = type;
  const std::string ns = route.ns;
  auto state =
      std::make_shared<std::pair<int64_t, std::vector<WatchEvent>>>(*after, std::move(initial));
  auto last_bookmark = std::make_shared<SteadyClock::time_point>(SteadyClock::now());
  const int epoch = watch_epoch_;
  // kubectl get -w asks for Tables: each event's object becomes one, the
  // first with the column definitions.
  const bool table = WantsTable(req.get_header_value("Accept"));
  const json crd = table ? CrdOf(type) : json();
  const std::string include_object = Param(req, "includeObject");
  auto columns_sent = std::make_shared<bool>(false);
  KeepUncompressed(req);
  res.status = 200;
  // An older version of resource.k8s.io gets each object converted.
  const std::string older = IsOlderDraVersion(route.group, route.version) ? route.version : "";
  res.set_chunked_content_provider(kJsonMedia, [this, state, watched, ns, options = *options,
                                                bookmarks, deadline, last_bookmark, epoch, table,
                                                crd, include_object, columns_sent,
                                                older](size_t, httplib::DataSink& sink) {
    auto send = [&](const json& event) {
      const std::string line = WatchEventLine(event, older);
      return sink.write(line.data(), line.size());
    };
    auto send_change = [&](const WatchEvent& e) {
      if (!table) return send({{"type", e.type}, {"object", e.object}});
      json rendered = ToTable(watched, e.object, crd, include_object, store_.clock().Now(),
                              /*with_columns=*/!*columns_sent);
      *columns_sent = true;
      return send({{"type", e.type}, {"object", std::move(rendered)}});
    };
    for (WatchEvent& e : state->second) {
      if (!send_change(e)) return false;
    }
    state->second.clear();
    if (stopping_ || watch_epoch_ != epoch || SteadyClock::now() >= deadline) {
      sink.done();
      return true;
    }
    std::vector<WatchEvent> events;
    const auto wait =
        std::min<SteadyClock::duration>(std::chrono::seconds(1), deadline - SteadyClock::now());
    if (!store_.WaitForEvents(watched, ns, state->first,
                              std::chrono::duration_cast<std::chrono::milliseconds>(wait), &events,
                              [this, epoch] { return stopping_ || watch_epoch_ != epoch; })) {
      send(ExpiredEvent(state->first, store_.resource_version()));
      sink.done();
      return true;
    }
    for (const WatchEvent& e : events) {
      state->first = std::max(state->first, e.resource_version);
      const json& meta = e.object.value("metadata", json::object());
      if (!options.labels.Matches(meta.value("labels", json())) ||
          !options.fields.Matches(e.object)) {
        continue;
      }
      if (!send_change(e)) return false;
    }
    if (bookmarks &&
        SteadyClock::now() - *last_bookmark >= std::chrono::seconds(options_.bookmark_seconds)) {
      *last_bookmark = SteadyClock::now();
      const int64_t rv = std::max(state->first, store_.resource_version());
      state->first = rv;
      if (!send(BookmarkEvent(watched, rv))) return false;
    }
    return sink.is_writable();
  });
}

}  // namespace canhazgpu::kubesim
