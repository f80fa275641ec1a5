#include "sla/contract.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "sched/slurm_reservation.h"
#include "sla/timestamp.h"

namespace cmax::sla {
namespace {

using json = nlohmann::json;
constexpr std::string_view kSchema = "cmax.sla-contract/1";
constexpr const char* kDefaultDownStates[] = {"down", "drain", "drained", "draining", "fail", "failing", "reboot"};

Unexpected<Error> bad(std::string_view field, std::string_view what) {
  return fail("read SLA contract: {}: {} (see docs/sla.md)", field, what);
}

Result<void> only_keys(const json& obj, std::string_view where, std::initializer_list<std::string_view> keys) {
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end())
      return bad(fmt::format("{}{}", where.empty() ? "" : std::string(where) + ".", it.key()),
                 "unknown field; check the spelling");
  return ok();
}

Result<std::string> get_string(const json& obj, std::string_view where, const char* key, bool required,
                               std::string fallback = {}) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) return bad(fmt::format("{}{}", where, key), "missing; it is required");
    return fallback;
  }
  if (!it->is_string()) return bad(fmt::format("{}{}", where, key), "must be a string");
  return it->get<std::string>();
}

Result<double> get_number(const json& obj, std::string_view where, const char* key, double lo, double hi,
                          std::optional<double> fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (!fallback) return bad(fmt::format("{}{}", where, key), "missing; it is required");
    return *fallback;
  }
  if (!it->is_number()) return bad(fmt::format("{}{}", where, key), "must be a number");
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi)
    return bad(fmt::format("{}{}", where, key), fmt::format("{} is outside [{}, {}]", v, lo, hi));
  return v;
}

Result<std::int32_t> get_gpus(const json& v, std::string_view field) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 1024)
    return bad(field, "must be a whole number of GPUs from 0 to 1024");
  return static_cast<std::int32_t>(v.get<std::int64_t>());
}

Result<void> parse_topology(const json& doc, Contract& c) {
  auto& t = c.topology;
  std::int32_t default_gpus = 8;
  if (auto it = doc.find("gpus_per_node"); it != doc.end()) {
    auto g = get_gpus(*it, "gpus_per_node");
    if (!g) return Unexpected<Error>{g.error()};
    default_gpus = *g;
  }
  auto top = doc.find("topology");
  if (top == doc.end() || !top->is_object()) return bad("topology", "missing; give {\"sites\": [...]}");
  if (auto r = only_keys(*top, "topology", {"sites"}); !r) return r;
  auto sites = top->find("sites");
  if (sites == top->end() || !sites->is_array() || sites->empty())
    return bad("topology.sites", "must be a non-empty array of {\"name\", \"racks\"}");
  std::unordered_map<std::string, std::int32_t> rack_seen, site_seen;
  for (std::size_t s = 0; s < sites->size(); ++s) {
    const json& site = (*sites)[s];
    const std::string where = fmt::format("topology.sites[{}].", s);
    if (!site.is_object()) return bad(where.substr(0, where.size() - 1), "must be an object");
    if (auto r = only_keys(site, where.substr(0, where.size() - 1), {"name", "racks"}); !r) return r;
    auto name = get_string(site, where, "name", true);
    if (!name) return Unexpected<Error>{name.error()};
    if (name->empty() || site_seen.count(*name)) return bad(where + "name", "empty or named twice");
    const auto site_index = static_cast<std::int32_t>(t.site_names.size());
    site_seen[*name] = site_index;
    t.site_names.push_back(*name);
    auto racks = site.find("racks");
    if (racks == site.end() || !racks->is_array() || racks->empty())
      return bad(where + "racks", "must be a non-empty array of {\"name\", \"nodes\"}");
    for (std::size_t r = 0; r < racks->size(); ++r) {
      const json& rack = (*racks)[r];
      const std::string rw = fmt::format("{}racks[{}].", where, r);
      if (!rack.is_object()) return bad(rw.substr(0, rw.size() - 1), "must be an object");
      if (auto k = only_keys(rack, rw.substr(0, rw.size() - 1), {"name", "nodes", "gpus_per_node"}); !k) return k;
      auto rname = get_string(rack, rw, "name", true);
      if (!rname) return Unexpected<Error>{rname.error()};
      if (rname->empty() || rack_seen.count(*rname)) return bad(rw + "name", "empty or named twice");
      std::int32_t gpus = default_gpus;
      if (auto g = rack.find("gpus_per_node"); g != rack.end()) {
        auto v = get_gpus(*g, rw + "gpus_per_node");
        if (!v) return Unexpected<Error>{v.error()};
        gpus = *v;
      }
      auto nodes = get_string(rack, rw, "nodes", true);
      if (!nodes) return Unexpected<Error>{nodes.error()};
      auto names = sched::expand_hostlist(*nodes);
      if (!names) return bad(rw + "nodes", names.error().message);
      if (names->empty()) return bad(rw + "nodes", "names no node; give a hostlist like \"r01-t[01-18]\"");
      const auto rack_index = static_cast<std::int32_t>(t.rack_names.size());
      rack_seen[*rname] = rack_index;
      t.rack_names.push_back(*rname);
      t.rack_site.push_back(site_index);
      t.rack_begin.push_back(static_cast<std::int32_t>(t.node_names.size()));
      for (auto& n : *names) {
        if (t.node_index.count(n)) return bad(rw + "nodes", fmt::format("node {} is in two racks", n));
        t.node_index.emplace(n, static_cast<std::int32_t>(t.node_names.size()));
        t.node_names.push_back(std::move(n));
        t.node_gpus.push_back(gpus);
        t.node_rack.push_back(rack_index);
      }
      if (t.node_names.size() > 10'000'000) return bad("topology", "more than 10,000,000 nodes");
    }
  }
  t.rack_begin.push_back(static_cast<std::int32_t>(t.node_names.size()));
  if (auto it = doc.find("node_gpus"); it != doc.end()) {
    if (!it->is_object()) return bad("node_gpus", "must be an object of node name -> GPU count");
    for (auto n = it->begin(); n != it->end(); ++n) {
      const std::int32_t i = t.find_node(n.key());
      if (i < 0) return bad("node_gpus." + n.key(), "names a node that no rack holds");
      auto g = get_gpus(n.value(), "node_gpus." + n.key());
      if (!g) return Unexpected<Error>{g.error()};
      t.node_gpus[static_cast<std::size_t>(i)] = *g;
    }
  }
  return ok();
}

Result<void> parse_rack_rule(const json& doc, Contract& c) {
  auto it = doc.find("rack_down");
  if (it == doc.end()) return ok();  // no rule: only node downtime counts
  if (!it->is_object()) return bad("rack_down", "must be {\"min_down_nodes\": K} or {\"rule\": \"any|all|none\"}");
  if (auto r = only_keys(*it, "rack_down", {"min_down_nodes", "rule"}); !r) return r;
  auto k = it->find("min_down_nodes");
  auto rule = it->find("rule");
  if ((k != it->end()) == (rule != it->end()))
    return bad("rack_down", "give exactly one of \"min_down_nodes\" and \"rule\"");
  if (k != it->end()) {
    if (!k->is_number_integer() || k->get<std::int64_t>() < 1 || k->get<std::int64_t>() > 100000)
      return bad("rack_down.min_down_nodes", "must be a whole number from 1 (\"any\") to the rack's size");
    c.rack_down_min_nodes = static_cast<std::int32_t>(k->get<std::int64_t>());
    return ok();
  }
  const std::string r = rule->is_string() ? rule->get<std::string>() : "";
  if (r == "any")
    c.rack_down_min_nodes = 1;
  else if (r == "all")
    c.rack_down_min_nodes = kAllNodes;
  else if (r == "none")
    c.rack_down_min_nodes = 0;
  else
    return bad("rack_down.rule", "must be \"any\", \"all\" or \"none\"");
  return ok();
}

Result<void> parse_exclusions(const json& doc, Contract& c) {
  auto it = doc.find("exclusions");
  if (it == doc.end()) return ok();
  if (!it->is_array()) return bad("exclusions", "must be an array");
  const auto& t = c.topology;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& e = (*it)[i];
    const std::string w = fmt::format("exclusions[{}].", i);
    if (!e.is_object()) return bad(w.substr(0, w.size() - 1), "must be an object");
    if (auto r = only_keys(e, w.substr(0, w.size() - 1), {"kind", "start", "end", "scope", "targets", "reason"}); !r)
      return r;
    Exclusion x;
    auto kind = get_string(e, w, "kind", true);
    if (!kind) return Unexpected<Error>{kind.error()};
    if (*kind == "maintenance")
      x.kind = Exclusion::Kind::maintenance;
    else if (*kind == "force_majeure")
      x.kind = Exclusion::Kind::force_majeure;
    else
      return bad(w + "kind", "must be \"maintenance\" or \"force_majeure\"");
    auto reason = get_string(e, w, "reason", x.kind == Exclusion::Kind::force_majeure);
    if (!reason) return Unexpected<Error>{reason.error()};
    if (x.kind == Exclusion::Kind::force_majeure && core::trim(*reason).empty())
      return bad(w + "reason", "force majeure needs a reason (what happened)");
    x.reason = *reason;
    for (const char* key : {"start", "end"}) {
      auto s = get_string(e, w, key, true);
      if (!s) return Unexpected<Error>{s.error()};
      auto v = parse_timestamp(*s, c.zone);
      if (!v) return bad(w + key, fmt::format("'{}' is not a time; write 2026-03-10T02:00:00 (contract zone) or "
                                              "with an offset", *s));
      (std::string_view(key) == "start" ? x.start_s : x.end_s) = *v;
    }
    if (x.end_s <= x.start_s) return bad(w + "end", "must be after start");
    auto scope = get_string(e, w, "scope", false, "all");
    if (!scope) return Unexpected<Error>{scope.error()};
    if (*scope == "all") {
      x.target = Exclusion::Target::all;
      if (e.contains("targets")) return bad(w + "targets", "scope \"all\" takes no targets");
    } else {
      if (*scope == "site")
        x.target = Exclusion::Target::site;
      else if (*scope == "rack")
        x.target = Exclusion::Target::rack;
      else if (*scope == "node")
        x.target = Exclusion::Target::node;
      else
        return bad(w + "scope", "must be \"all\", \"site\", \"rack\" or \"node\"");
      auto targets = e.find("targets");
      if (targets == e.end() || !(targets->is_array() || targets->is_string()))
        return bad(w + "targets", "must name the sites, racks or nodes (an array, or a hostlist string)");
      std::vector<std::string> names;
      if (targets->is_string()) {
        auto expanded = sched::expand_hostlist(targets->get<std::string>());
        if (!expanded) return bad(w + "targets", expanded.error().message);
        names = std::move(*expanded);
      } else {
        for (const auto& n : *targets) {
          if (!n.is_string()) return bad(w + "targets", "must hold strings");
          names.push_back(n.get<std::string>());
        }
      }
      if (names.empty()) return bad(w + "targets", "names nothing");
      for (const auto& n : names) {
        std::int32_t index = -1;
        const auto& list = x.target == Exclusion::Target::site ? t.site_names : t.rack_names;
        if (x.target == Exclusion::Target::node) {
          index = t.find_node(n);
        } else {
          auto f = std::find(list.begin(), list.end(), n);
          if (f != list.end()) index = static_cast<std::int32_t>(f - list.begin());
        }
        if (index < 0) return bad(w + "targets", fmt::format("no {} named '{}' in the topology", *scope, n));
        x.indices.push_back(index);
      }
    }
    c.exclusions.push_back(std::move(x));
  }
  return ok();
}

Result<void> parse_credits(const json& doc, Contract& c) {
  auto it = doc.find("credits");
  if (it == doc.end() || !it->is_object())
    return bad("credits", "missing; give {\"currency\", \"fee_per_gpu_hour\" or \"fee_per_node_month\", \"tiers\"}");
  if (auto r = only_keys(*it, "credits", {"currency", "fee_per_gpu_hour", "fee_per_node_month", "tiers"}); !r)
    return r;
  auto cur = get_string(*it, "credits.", "currency", false, "USD");
  if (!cur) return Unexpected<Error>{cur.error()};
  c.currency = *cur;
  const bool per_gpu = it->contains("fee_per_gpu_hour"), per_node = it->contains("fee_per_node_month");
  if (per_gpu == per_node) return bad("credits", "give exactly one of \"fee_per_gpu_hour\" and \"fee_per_node_month\"");
  auto fee = get_number(*it, "credits.", per_gpu ? "fee_per_gpu_hour" : "fee_per_node_month", 0, 1e9, std::nullopt);
  if (!fee) return Unexpected<Error>{fee.error()};
  (per_gpu ? c.fee_per_gpu_hour : c.fee_per_node_month) = *fee;
  auto tiers = it->find("tiers");
  if (tiers == it->end() || !tiers->is_array() || tiers->empty())
    return bad("credits.tiers", "must be a non-empty array of {\"below_percent\", \"credit_percent\"}");
  for (std::size_t i = 0; i < tiers->size(); ++i) {
    const json& tier = (*tiers)[i];
    const std::string w = fmt::format("credits.tiers[{}].", i);
    if (!tier.is_object()) return bad(w.substr(0, w.size() - 1), "must be an object");
    if (auto r = only_keys(tier, w.substr(0, w.size() - 1), {"below_percent", "credit_percent"}); !r) return r;
    auto below = get_number(tier, w, "below_percent", 0, 100, std::nullopt);
    if (!below) return Unexpected<Error>{below.error()};
    auto credit = get_number(tier, w, "credit_percent", 0, 100, std::nullopt);
    if (!credit) return Unexpected<Error>{credit.error()};
    c.credit_tiers.push_back({*below, *credit});
  }
  std::sort(c.credit_tiers.begin(), c.credit_tiers.end(),
            [](const CreditTier& a, const CreditTier& b) { return a.below_percent > b.below_percent; });
  for (std::size_t i = 1; i < c.credit_tiers.size(); ++i) {
    if (c.credit_tiers[i].below_percent == c.credit_tiers[i - 1].below_percent)
      return bad("credits.tiers", fmt::format("two tiers below {}%", c.credit_tiers[i].below_percent));
    if (c.credit_tiers[i].credit_percent < c.credit_tiers[i - 1].credit_percent)
      return bad("credits.tiers", "a lower availability must not earn a smaller credit");
  }
  return ok();
}

Result<void> parse_cancellation(const json& doc, Contract& c) {
  auto it = doc.find("cancellation");
  if (it == doc.end()) return ok();
  if (!it->is_object()) return bad("cancellation", "must be an object");
  if (auto r = only_keys(*it, "cancellation", {"below_percent", "consecutive_months_below_target"}); !r) return r;
  if (it->contains("below_percent")) {
    auto v = get_number(*it, "cancellation.", "below_percent", 0, 100, std::nullopt);
    if (!v) return Unexpected<Error>{v.error()};
    c.cancel_below_percent = *v;
  }
  if (auto n = it->find("consecutive_months_below_target"); n != it->end()) {
    if (!n->is_number_integer() || n->get<std::int64_t>() < 1 || n->get<std::int64_t>() > 120)
      return bad("cancellation.consecutive_months_below_target", "must be a whole number of months from 1 to 120");
    c.cancel_consecutive_months = static_cast<std::int32_t>(n->get<std::int64_t>());
  }
  return ok();
}

}  // namespace

std::string_view scope_name(Scope s) {
  switch (s) {
    case Scope::node: return "node";
    case Scope::rack: return "rack";
    case Scope::site: return "site";
  }
  return "rack";
}

std::int32_t Topology::find_node(std::string_view name) const {
  auto it = node_index.find(std::string(name));
  return it == node_index.end() ? -1 : it->second;
}

bool is_down_state(std::string_view state, const std::vector<std::string>& down_states) {
  std::size_t pos = 0;
  while (pos <= state.size()) {
    std::size_t plus = state.find('+', pos);
    if (plus == std::string_view::npos) plus = state.size();
    std::string_view part = core::trim(state.substr(pos, plus - pos));
    while (!part.empty() && std::string_view("*~#!%$@^-").find(part.back()) != std::string_view::npos)
      part.remove_suffix(1);
    const std::string lower = core::to_lower(part);
    if (!lower.empty() && std::find(down_states.begin(), down_states.end(), lower) != down_states.end()) return true;
    pos = plus + 1;
  }
  return false;
}

Result<Contract> parse_contract(std::string_view json_text) {
  json doc = json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return fail("read SLA contract: not a JSON object; start from docs/sla-contract.sample.json");
  if (auto r = only_keys(doc, "", {"schema", "name", "scope", "time_zone", "availability_target_percent",
                                   "gpus_per_node", "node_gpus", "down_states", "rack_down", "topology",
                                   "exclusions", "credits", "cancellation"});
      !r)
    return Unexpected<Error>{r.error()};
  auto schema = get_string(doc, "", "schema", true);
  if (!schema) return Unexpected<Error>{schema.error()};
  if (*schema != kSchema) return bad("schema", fmt::format("is '{}'; this cmax reads \"{}\"", *schema, kSchema));
  Contract c;
  auto name = get_string(doc, "", "name", false, "");
  if (!name) return Unexpected<Error>{name.error()};
  c.name = *name;
  auto scope = get_string(doc, "", "scope", true);
  if (!scope) return Unexpected<Error>{scope.error()};
  if (*scope == "node")
    c.scope = Scope::node;
  else if (*scope == "rack")
    c.scope = Scope::rack;
  else if (*scope == "site")
    c.scope = Scope::site;
  else
    return bad("scope", fmt::format("is '{}'; must be \"node\", \"rack\" or \"site\"", *scope));
  auto tz = get_string(doc, "", "time_zone", true);
  if (!tz) return Unexpected<Error>{tz.error()};
  auto zone = Zone::load(*tz);
  if (!zone) return bad("time_zone", zone.error().message);
  c.zone = std::move(*zone);
  auto target = get_number(doc, "", "availability_target_percent", 0, 100, std::nullopt);
  if (!target) return Unexpected<Error>{target.error()};
  c.target_percent = *target;
  if (auto it = doc.find("down_states"); it != doc.end()) {
    if (!it->is_array() || it->empty()) return bad("down_states", "must be a non-empty array of state names");
    for (const auto& s : *it) {
      if (!s.is_string() || s.get<std::string>().empty()) return bad("down_states", "must hold non-empty strings");
      c.down_states.push_back(core::to_lower(s.get<std::string>()));
    }
  } else {
    c.down_states.assign(std::begin(kDefaultDownStates), std::end(kDefaultDownStates));
  }
  for (auto step : {parse_topology, parse_rack_rule, parse_exclusions, parse_credits, parse_cancellation})
    if (auto r = step(doc, c); !r) return Unexpected<Error>{r.error()};
  return c;
}

}  // namespace cmax::sla
