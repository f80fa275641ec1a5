#include "report/scan_report.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "signals/classify.h"

namespace cmax::report {

using signals::Action;
using signals::Incident;

namespace {

// One incident as a JSON object on one line, written directly (an incident stream can hold
// tens of thousands; a document tree per incident cost more than the scan's classification).
void append_incident_json(std::string& out, const Incident& i) {
  auto key = [&](std::string_view k) {
    out += out.back() == '{' ? "\"" : ",\"";
    out += k;
    out += "\":";
  };
  auto str = [&](std::string_view k, std::string_view v) {
    key(k);
    core::append_json_string(out, v);
  };
  out += '{';
  str("node", i.node);
  str("kind", signals::to_string(i.kind));
  key("code");
  out += i.code >= 0 ? std::to_string(i.code) : "null";
  if (signals::is_pci(i.device)) {
    str("pci", i.device);
  } else {
    key("pci");
    out += "null";
  }
  str("device", i.device);
  str("subject", i.subject);
  str("action", signals::to_string(i.action));
  str("reason", i.reason);
  key("count");
  out += std::to_string(i.count);
  str("first_seen", i.first_seen);
  str("last_seen", i.last_seen);
  key("resolved");
  out += i.resolved ? "true" : "false";
  key("related");
  out += '[';
  for (std::size_t k = 0; k < i.related.size(); ++k) {
    if (k) out += ',';
    core::append_json_string(out, i.related[k]);
  }
  out += ']';
  // Root cause: the index (in this document's incidents) of the incident that explains this one.
  key("parent");
  out += i.parent >= 0 ? std::to_string(i.parent) : "null";
  if (i.parent >= 0) str("cause", i.cause);
  key("children");
  out += '[';
  for (std::size_t k = 0; k < i.children.size(); ++k) {
    if (k) out += ',';
    out += std::to_string(i.children[k]);
  }
  out += ']';
  if (!i.origin.empty()) str("origin", i.origin);
  if (!i.drill.empty()) str("drill", i.drill);
  str("sample", i.sample);
  out += '}';
}

std::string dump(const nlohmann::ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Writes the document piecewise: header fields, then one incident at a time.
void emit_scan_json(const ScanReport& r, const std::function<void(std::string_view)>& put) {
  const auto& s = r.stats;
  nlohmann::ordered_json stats = {{"bytes", s.bytes},
                                  {"seconds", r.seconds},
                                  {"candidate_lines", s.candidate_lines},
                                  {"signals", s.signals},
                                  {"incidents", r.incidents.size()},
                                  {"skipped_long_lines", s.skipped_long},
                                  {"skipped_overlong_lines", s.overlong_lines},
                                  {"lost_kmsg_records", s.lost_records},
                                  {"ignored", s.ignored},
                                  {"userspace_dropped", s.userspace_dropped},
                                  {"drill_markers", s.drill_markers},
                                  {"drill_lines", s.drill_lines},
                                  {"merged_past_incident_cap", r.merged_past_cap},
                                  {"dropped_past_incident_cap", r.dropped_past_cap},
                                  {"prefilter", r.prefilter}};
  put(fmt::format("{{\n  \"schema\": \"{}\",\n  \"sources\": {},\n  \"errors\": {},\n  \"stats\": {},\n  \"incidents\": [",
                  kScanSchema, dump(nlohmann::ordered_json(r.sources), -1), dump(nlohmann::ordered_json(r.errors), -1),
                  dump(stats, -1)));
  bool first = true;
  std::string piece;
  for (const auto& i : r.incidents) {
    piece = first ? "\n    " : ",\n    ";
    append_incident_json(piece, i);
    put(piece);
    first = false;
  }
  put(first ? "],\n  \"drills\": [" : "\n  ],\n  \"drills\": [");
  first = true;
  for (const auto& i : r.drills) {
    piece = first ? "\n    " : ",\n    ";
    append_incident_json(piece, i);
    put(piece);
    first = false;
  }
  put(first ? "]\n}\n" : "\n  ]\n}\n");
}

}  // namespace

std::string scan_to_json(const ScanReport& r) {
  std::string out;
  emit_scan_json(r, [&](std::string_view piece) { out.append(piece); });
  return out;
}

void write_scan_json(const ScanReport& r, std::FILE* out) {
  emit_scan_json(r, [&](std::string_view piece) { std::fwrite(piece.data(), 1, piece.size(), out); });
}

std::string render_scan_terminal(const ScanReport& r, bool color) {
  std::string out;
  std::vector<const Incident*> sorted;
  for (const auto& i : r.incidents) sorted.push_back(&i);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Incident* a, const Incident* b) {
    return std::tie(a->node, a->device) < std::tie(b->node, b->device);
  });
  std::string node;
  for (const auto* i : sorted) {
    if (i->node != node) {
      node = i->node;
      out += fmt::format("\n{}{}{}\n", color ? "\033[1m" : "", node, color ? "\033[0m" : "");
      out += fmt::format("  {:<14} {:<13} {:>6} {:>7}  {:<12} {:<16} {}\n", "DEVICE", "KIND", "CODE", "COUNT",
                         "ACTION", "LAST SEEN", "SAMPLE");
    }
    std::string sample = i->sample.size() > 70 ? i->sample.substr(0, 67) + "..." : i->sample;
    std::string action(signals::to_string(i->action));
    if (i->resolved) action += "*";
    std::string_view paint = i->action >= Action::drain ? "\033[31m" : i->action >= Action::restart_app ? "\033[33m" : "";
    out += fmt::format("  {:<14} {:<13} {:>6} {:>7}  {}{:<12}{} {:<16} {}\n", i->device.empty() ? "-" : i->device,
                       signals::to_string(i->kind), i->code >= 0 ? std::to_string(i->code) : "-", i->count,
                       color ? paint : "", action, color && !paint.empty() ? "\033[0m" : "",
                       i->last_seen.size() > 16 ? i->last_seen.substr(0, 16) : i->last_seen, sample);
    if (!i->related.empty()) {
      std::string rel;
      for (const auto& x : i->related) rel += (rel.empty() ? "" : ", ") + x;
      out += fmt::format("  {:<14} folded in: {}\n", "", rel);
    }
    if (!i->children.empty()) {
      out += fmt::format("  {:<14} root cause of:\n", "");
      for (std::size_t c : i->children)
        if (c < r.incidents.size()) {
          const Incident& ch = r.incidents[c];
          out += fmt::format("  {:<14}   {} {} x{} ({}): {}\n", "", signals::to_string(ch.kind),
                             ch.device.empty() ? "-" : ch.device, ch.count, signals::to_string(ch.action), ch.cause);
        }
    }
    if (i->parent >= 0 && static_cast<std::size_t>(i->parent) < r.incidents.size()) {
      const Incident& p = r.incidents[static_cast<std::size_t>(i->parent)];
      out += fmt::format("  {:<14} caused by {} {} ({})\n", "", signals::to_string(p.kind),
                         p.device.empty() ? "-" : p.device, p.first_seen);
    }
  }
  if (!r.drills.empty()) {
    out += fmt::format("\n{}Fault drills{} (lines cmax drill wrote: not the node's faults, not counted)\n",
                       color ? "\033[1m" : "", color ? "\033[0m" : "");
    out += fmt::format("  {:<12} {:<14} {:<14} {:<13} {:>6} {:>7}  {}\n", "DRILL", "NODE", "DEVICE", "KIND", "CODE",
                       "COUNT", "WOULD BE");
    for (const auto& i : r.drills)
      out += fmt::format("  {:<12} {:<14} {:<14} {:<13} {:>6} {:>7}  {}\n", i.drill, i.node,
                         i.device.empty() ? "-" : i.device, signals::to_string(i.kind),
                         i.code >= 0 ? std::to_string(i.code) : "-", i.count, signals::to_string(i.action));
  }
  const auto& s = r.stats;
  out += fmt::format("\n{} incident(s) from {} signal line(s) in {:.1f} MB ({} source(s), {:.2f} s); ", r.incidents.size(),
                     s.signals, s.bytes / 1e6, r.sources.size(), r.seconds);
  out += fmt::format("skipped {} over-long line(s), {} lost kmsg record(s). '*' = resolved.\n",
                     s.skipped_long + s.overlong_lines, s.lost_records);
  for (const auto& e : r.errors) out += fmt::format("error: {}\n", e);
  return out;
}

int scan_exit_code(const ScanReport& r) {
  for (const auto& i : r.incidents)
    if (!i.resolved && i.action > Action::monitor) return 1;
  return 0;
}

}  // namespace cmax::report
