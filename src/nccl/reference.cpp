#include "nccl/reference.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <nlohmann/json.hpp>

namespace cmax::nccl {

extern const char kNcclReferenceJson[];  // generated from data/nccl_reference.json

namespace {

using nlohmann::json;

constexpr std::string_view kSchema = "cmax.nccl-reference/1";
constexpr std::size_t kMaxEntries = 1000;
// Far above any fabric's bus bandwidth (NVLink 5 is 900 GB/s per GPU): a larger number is a typo
// or a unit mix-up (Gbit/s, MB/s).
constexpr double kMaxGbps = 10000;

constexpr std::array<std::string_view, 11> kFields{
    "gpu",     "fabric", "collective",          "nodes",         "min_nodes", "max_nodes",
    "variant", "source", "expected_busbw_gbps", "pass_bar_gbps", "note"};

Unexpected<Error> entry_error(std::string_view origin, std::size_t i, std::string_view what) {
  return fail("{}: references[{}]: {}", origin, i, what);
}

Result<std::string> text_field(const json& e, std::string_view key, bool required,
                               std::string_view origin, std::size_t i) {
  auto it = e.find(key);
  if (it == e.end()) {
    if (required) return entry_error(origin, i, fmt::format("'{}' is missing; add it", key));
    return std::string();
  }
  if (!it->is_string())
    return entry_error(origin, i,
                       fmt::format("'{}' must be a string, not {}", key, it->type_name()));
  return it->get<std::string>();
}

Result<std::optional<int>> nodes_field(const json& e, std::string_view key, std::string_view origin,
                                       std::size_t i) {
  auto it = e.find(key);
  if (it == e.end()) return std::optional<int>();
  if (!it->is_number_integer() || it->get<long long>() < 1 || it->get<long long>() > kAnyNodes)
    return entry_error(origin, i, fmt::format("'{}' must be a whole number of nodes >= 1", key));
  return std::optional<int>(static_cast<int>(it->get<long long>()));
}

Result<std::optional<double>> gbps_field(const json& e, std::string_view key,
                                         std::string_view origin, std::size_t i) {
  auto it = e.find(key);
  if (it == e.end()) return std::optional<double>();
  if (!it->is_number() || !(it->get<double>() > 0) || it->get<double>() > kMaxGbps)
    return entry_error(origin, i,
                       fmt::format("'{}' must be a number of GB/s in (0, {}]", key, kMaxGbps));
  return std::optional<double>(it->get<double>());
}

Result<Reference> read_entry(const json& e, std::string_view origin, std::size_t i) {
  if (!e.is_object())
    return entry_error(origin, i, fmt::format("must be an object, not {}", e.type_name()));
  for (const auto& [key, value] : e.items()) {
    bool known = false;
    for (auto f : kFields) known = known || key == f;
    if (!known)
      return entry_error(
          origin, i,
          fmt::format("unknown field '{}'; the fields are gpu, fabric, collective, "
                      "nodes (or min_nodes/max_nodes), variant, expected_busbw_gbps, "
                      "pass_bar_gbps, source, note",
                      key));
  }
  Reference r;
  auto gpu = text_field(e, "gpu", true, origin, i);
  if (!gpu) return Unexpected<Error>{gpu.error()};
  if (gpu->empty()) return entry_error(origin, i, "'gpu' is empty; name the GPU, e.g. \"H100\"");
  r.gpu = std::move(*gpu);

  auto coll = text_field(e, "collective", true, origin, i);
  if (!coll) return Unexpected<Error>{coll.error()};
  Collective c = collective_from_name(*coll);
  if (c == Collective::kUnknown)
    return entry_error(origin, i,
                       fmt::format("'collective' \"{}\" is not an nccl-tests collective; use e.g. "
                                   "\"all_reduce\"",
                                   *coll));
  r.collective = std::string(collective_name(c));

  for (auto [key, out] : {std::pair{"fabric", &r.fabric}, std::pair{"source", &r.source},
                          std::pair{"note", &r.note}, std::pair{"variant", &r.variant}}) {
    auto v = text_field(e, key, false, origin, i);
    if (!v) return Unexpected<Error>{v.error()};
    if (!v->empty()) *out = std::move(*v);
  }
  if (r.source.empty())
    return entry_error(origin, i, "'source' is missing; every number needs a public source");

  auto nodes = nodes_field(e, "nodes", origin, i);
  auto min_nodes = nodes_field(e, "min_nodes", origin, i);
  auto max_nodes = nodes_field(e, "max_nodes", origin, i);
  for (auto* n : {&nodes, &min_nodes, &max_nodes})
    if (!*n) return Unexpected<Error>{n->error()};
  std::optional<int> exact = *nodes, low = *min_nodes, high = *max_nodes;
  if (exact && (low || high))
    return entry_error(origin, i, "give either 'nodes' or 'min_nodes'/'max_nodes', not both");
  if (exact) {
    r.min_nodes = r.max_nodes = *exact;
  } else if (low || high) {
    r.min_nodes = low.value_or(1);
    r.max_nodes = high.value_or(kAnyNodes);
    if (r.min_nodes > r.max_nodes)
      return entry_error(
          origin, i,
          fmt::format("'min_nodes' {} is above 'max_nodes' {}", r.min_nodes, r.max_nodes));
  } else {
    return entry_error(origin, i, "no node count; add 'nodes' or 'min_nodes'/'max_nodes'");
  }

  auto expected = gbps_field(e, "expected_busbw_gbps", origin, i);
  if (!expected) return Unexpected<Error>{expected.error()};
  auto bar = gbps_field(e, "pass_bar_gbps", origin, i);
  if (!bar) return Unexpected<Error>{bar.error()};
  if (!*expected && !*bar)
    return entry_error(origin, i, "has no number; add 'expected_busbw_gbps' or 'pass_bar_gbps'");
  r.expected_busbw_gbps = *expected;
  r.pass_bar_gbps = *bar;
  return r;
}

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }
bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// `word` inside `text`, case-insensitive, not glued to letters or digits on either side: "H100"
// matches "NVIDIA H100 80GB HBM3" and "H100-SXM5", and "H20" does not match "NVIDIA H200".
bool contains_word(std::string_view text, std::string_view word) {
  if (word.empty() || word.size() > text.size()) return false;
  for (std::size_t at = 0; at + word.size() <= text.size(); ++at) {
    bool same = true;
    for (std::size_t k = 0; same && k < word.size(); ++k)
      same = lower(text[at + k]) == lower(word[k]);
    if (!same) continue;
    bool left_ok = at == 0 || !word_char(text[at - 1]) || !word_char(word.front());
    std::size_t end = at + word.size();
    bool right_ok = end == text.size() || !word_char(text[end]) || !word_char(word.back());
    if (left_ok && right_ok) return true;
  }
  return false;
}

}  // namespace

Result<std::vector<Reference>> parse_references(std::string_view text, std::string_view origin) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    std::string_view what = e.what();
    if (auto close = what.find("] "); what.starts_with("[json.") && close != std::string_view::npos)
      what.remove_prefix(close + 2);
    return fail("{}: not valid JSON ({}); check the file with a JSON validator", origin, what);
  }
  if (!doc.is_object()) return fail("{}: must be a JSON object, not {}", origin, doc.type_name());
  if (!doc.contains("schema") || doc["schema"] != kSchema)
    return fail("{}: 'schema' must be \"{}\"; add that key to the top object", origin, kSchema);
  if (!doc.contains("references") || !doc["references"].is_array())
    return fail("{}: 'references' must be an array of entries", origin);
  const json& list = doc["references"];
  if (list.size() > kMaxEntries)
    return fail("{}: 'references' holds {} entries; a table may hold at most {}", origin,
                list.size(), kMaxEntries);
  std::vector<Reference> out;
  out.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto r = read_entry(list[i], origin, i);
    if (!r) return Unexpected<Error>{r.error()};
    out.push_back(std::move(*r));
  }
  return out;
}

Result<std::vector<Reference>> builtin_references() {
  return parse_references(kNcclReferenceJson, "built-in data/nccl_reference.json");
}

std::string reference_fabric(const Reference& r) {
  auto has = [&](std::string_view n) { return r.fabric.find(n) != std::string::npos; };
  if (has("NVLink") && has("intra")) return "NVLink";
  if (has("RoCE")) return "RoCE";
  if (has("EFA")) return "EFA";
  if (has("TCPX")) return "TCPX";
  if (has("Slingshot")) return "Slingshot";
  if (has("IB") || has("InfiniBand") || has("Azure ND")) return "IB";  // Azure ND v5: 8x400G InfiniBand
  return {};
}

int reference_nics(const Reference& r) {
  // "8x400G IB", "32x100G EFA (p5.48xlarge)": the count before the 'x'; 0 when not stated.
  int n = 0;
  std::size_t i = 0;
  while (i < r.fabric.size() && r.fabric[i] >= '0' && r.fabric[i] <= '9' && n < 100000)
    n = n * 10 + (r.fabric[i++] - '0');
  return i > 0 && i < r.fabric.size() && r.fabric[i] == 'x' ? n : 0;
}

const Reference* find_reference(const std::vector<Reference>& refs, const Run& run,
                                std::string_view variant) {
  if (run.gpu_model.empty() || run.nodes < 1) return nullptr;
  // One node: the NVLink numbers. Several: the fabric the log shows or the user declared; a run
  // whose fabric is unknown is judged against none (an A3 Mega's TCPXO is not 8x400G IB).
  const std::string want = run.nodes == 1 ? std::string("NVLink") : run.fabric;
  // Azure's acceptance bars are asked for by name (the user says the run is on Azure ND).
  const bool by_name = variant == "azure";
  if (want.empty() && !by_name) return nullptr;
  std::string_view coll = collective_name(run.collective);
  const Reference* best = nullptr;
  for (const auto& r : refs) {
    if (r.variant != variant || r.collective != coll) continue;
    if (run.nodes < r.min_nodes || run.nodes > r.max_nodes) continue;
    if (!contains_word(run.gpu_model, r.gpu)) continue;
    if (!by_name && reference_fabric(r) != want) continue;
    // 4 NICs are not 8x400G: a NIC count the log shows must be the reference's.
    if (run.nodes > 1 && run.nics > 0 && reference_nics(r) > 0 && reference_nics(r) != run.nics) continue;
    bool exact = r.min_nodes == r.max_nodes;
    if (!best)
      best = &r;
    else if (exact && best->min_nodes != best->max_nodes)
      best = &r;
  }
  return best;
}

}  // namespace cmax::nccl
