#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "sla/parse.h"
#include "sla/timestamp.h"

namespace cmax::sla {
namespace {

using json = nlohmann::json;

std::optional<std::int64_t> json_time(const json& v, const Zone& zone) {
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return v.get<std::int64_t>();
  if (v.is_number_unsigned()) return static_cast<std::int64_t>(std::min<std::uint64_t>(v.get<std::uint64_t>(), 253402300799u));
  if (v.is_number_float() && v.get<double>() >= 0 && v.get<double>() < 253402300800.0)
    return static_cast<std::int64_t>(v.get<double>());
  if (v.is_string()) return parse_timestamp(v.get_ref<const std::string&>(), zone);
  return std::nullopt;
}

}  // namespace

Result<EventSet> parse_events_json(std::string_view text, const Zone& zone) {
  json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded())
    return fail("read events JSON: not valid JSON; give an array of {{\"node\", \"start\", \"end\", \"state\"}} "
                "or {{\"intervals\": [...]}}");
  const json* list = &doc;
  if (doc.is_object()) {
    auto it = doc.find("intervals");
    if (it == doc.end() || !it->is_array())
      return fail("read events JSON: the object has no \"intervals\" array; put the intervals there");
    list = &*it;
  } else if (!doc.is_array()) {
    return fail("read events JSON: the document is neither an array nor an object with \"intervals\"");
  }
  EventSet set;
  std::size_t i = 0;
  for (const json& row : *list) {
    ++set.records;
    const std::size_t index = i++;
    if (!row.is_object()) {
      set.anomalies.malformed.add(fmt::format("intervals[{}]: not an object", index));
      continue;
    }
    auto node = row.find("node");
    if (node == row.end() || !node->is_string() || node->get_ref<const std::string&>().empty()) {
      set.anomalies.malformed.add(fmt::format("intervals[{}]: no \"node\" string", index));
      continue;
    }
    auto start_it = row.find("start");
    const auto start = start_it == row.end() ? std::nullopt : json_time(*start_it, zone);
    auto end_it = row.find("end");
    const bool open = end_it == row.end() || end_it->is_null() ||
                      (end_it->is_string() && (end_it->get_ref<const std::string&>().empty() ||
                                               end_it->get_ref<const std::string&>() == "Unknown"));
    const auto end = open ? std::optional<std::int64_t>(kOpenEnd) : json_time(*end_it, zone);
    if (!start || !end) {
      set.anomalies.malformed.add(fmt::format("intervals[{}] ({}): unreadable {}", index,
                                              core::clip(node->get_ref<const std::string&>(), 60),
                                              !start ? "start" : "end"));
      continue;
    }
    auto state_it = row.find("state");
    std::string_view state = "down";
    if (state_it != row.end() && state_it->is_string() && !state_it->get_ref<const std::string&>().empty())
      state = state_it->get_ref<const std::string&>();
    const std::int32_t st = set.state(state);
    set.intervals.push_back(RawInterval{*start, *end, set.node(node->get_ref<const std::string&>()), st});
  }
  return set;
}

}  // namespace cmax::sla
