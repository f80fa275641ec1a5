#include "campaign/plan.h"

#include <array>
#include <set>

#include <nlohmann/json.hpp>

#include "core/text_file.h"

namespace cmax::campaign {

extern const char kPlan_quick[];
extern const char kPlan_standard[];
extern const char kPlan_full[];

namespace {

using json = nlohmann::json;

constexpr std::array<std::pair<Kind, std::string_view>, 10> kKinds{{{Kind::audit, "audit"},
                                                                    {Kind::isolation, "isolation"},
                                                                    {Kind::scan, "scan"},
                                                                    {Kind::active, "active"},
                                                                    {Kind::nccl, "nccl"},
                                                                    {Kind::drill, "drill"},
                                                                    {Kind::endpoint, "endpoint"},
                                                                    {Kind::sla, "sla"},
                                                                    {Kind::score, "score"},
                                                                    {Kind::report, "report"}}};
constexpr int kMaxBudgetS = 7 * 24 * 3600;
constexpr std::size_t kMaxStages = 64;
constexpr std::size_t kMaxPlanBytes = 1u << 20;

bool valid_id(std::string_view id) {
  if (id.empty() || id.size() > 40) return false;
  for (char c : id)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

std::string kind_list() {
  std::string s;
  for (const auto& [k, n] : kKinds) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

}  // namespace

std::string_view to_string(Kind k) {
  for (const auto& [kind, name] : kKinds)
    if (kind == k) return name;
  return "unknown";
}

bool parse_kind(std::string_view name, Kind* out) {
  for (const auto& [kind, n] : kKinds)
    if (n == name) {
      *out = kind;
      return true;
    }
  return false;
}

namespace {
Result<Plan> parse_plan_doc(const json& doc, std::string_view origin);
}  // namespace

Result<Plan> parse_plan(std::string_view text, std::string_view origin) {
  json doc = json::parse(text, nullptr, false);
  // A field of the wrong type (a "schema" that is an array, say) is an error that says so, never
  // an exception that loses the run.
  try {
    return parse_plan_doc(doc, origin);
  } catch (const json::exception& e) {
    return fail("read plan {}: a field has the wrong type ({}); docs/plan.md lists each field's", origin, e.what());
  }
}

namespace {
Result<Plan> parse_plan_doc(const json& doc, std::string_view origin) {
  if (doc.is_discarded() || !doc.is_object())
    return fail("read plan {}: not a JSON object; a plan is {{\"schema\": \"cmax.plan/1\", \"stages\": [...]}} "
                "(docs/plan.md)",
                origin);
  if (doc.value("schema", std::string()) != "cmax.plan/1")
    return fail("read plan {}: 'schema' must be \"cmax.plan/1\" (docs/plan.md)", origin);
  static const std::set<std::string> kTop{"schema", "name", "about", "stages"};
  for (const auto& [k, v] : doc.items())
    if (!kTop.count(k)) return fail("read plan {}: unknown field '{}' (fields: schema, name, about, stages)", origin, k);
  Plan p;
  p.origin = std::string(origin);
  if (doc.contains("name") && !doc["name"].is_string()) return fail("read plan {}: 'name' must be a string", origin);
  if (doc.contains("about") && !doc["about"].is_string()) return fail("read plan {}: 'about' must be a string", origin);
  p.name = doc.value("name", std::string("custom"));
  p.about = doc.value("about", std::string());
  if (!doc.contains("stages") || !doc["stages"].is_array() || doc["stages"].empty())
    return fail("read plan {}: 'stages' must be a non-empty array", origin);
  if (doc["stages"].size() > kMaxStages)
    return fail("read plan {}: {} stages; at most {}", origin, doc["stages"].size(), kMaxStages);
  static const std::set<std::string> kFields{"id", "kind", "budget_s", "min_s", "args"};
  std::set<std::string> ids;
  for (std::size_t i = 0; i < doc["stages"].size(); ++i) {
    const json& s = doc["stages"][i];
    const std::string at = fmt::format("read plan {}: stages[{}]", origin, i);
    if (!s.is_object()) return fail("{}: must be an object", at);
    for (const auto& [k, v] : s.items())
      if (!kFields.count(k)) return fail("{}: unknown field '{}' (fields: id, kind, budget_s, min_s, args)", at, k);
    StageSpec st;
    if (!s.contains("kind") || !s["kind"].is_string() || !parse_kind(s["kind"].get<std::string>(), &st.kind))
      return fail("{}: 'kind' must be one of {}", at, kind_list());
    st.id = s.contains("id") && s["id"].is_string() ? s["id"].get<std::string>() : std::string(to_string(st.kind));
    if (!valid_id(st.id)) return fail("{}: 'id' must be 1-40 of a-z, 0-9, '_' and '-'", at);
    if (!ids.insert(st.id).second) return fail("{}: id '{}' is used twice; give each stage its own id", at, st.id);
    auto seconds = [&](const char* key, int def, int* out) -> Result<void> {
      if (!s.contains(key)) return *out = def, Result<void>{};
      if (!s[key].is_number_integer() || s[key].get<long long>() < 1 || s[key].get<long long>() > kMaxBudgetS)
        return fail("{} ({}): '{}' must be whole seconds from 1 to {}", at, st.id, key, kMaxBudgetS);
      *out = s[key].get<int>();
      return {};
    };
    if (auto r = seconds("budget_s", 60, &st.budget_s); !r) return Unexpected<Error>{r.error()};
    if (auto r = seconds("min_s", 1, &st.min_s); !r) return Unexpected<Error>{r.error()};
    if (st.min_s > st.budget_s)
      return fail("{} ({}): 'min_s' {} is above 'budget_s' {}", at, st.id, st.min_s, st.budget_s);
    if (s.contains("args")) {
      if (!s["args"].is_array()) return fail("{} ({}): 'args' must be an array of strings", at, st.id);
      for (const auto& a : s["args"]) {
        if (!a.is_string()) return fail("{} ({}): 'args' must be an array of strings", at, st.id);
        st.args.push_back(a.get<std::string>());
      }
    }
    p.stages.push_back(std::move(st));
  }
  return p;
}
}  // namespace

Result<Plan> load_plan(std::string_view name_or_path) {
  const std::pair<std::string_view, const char*> presets[] = {
      {"quick", kPlan_quick}, {"standard", kPlan_standard}, {"full", kPlan_full}};
  for (const auto& [name, text] : presets)
    if (name == name_or_path) return parse_plan(text, fmt::format("preset {}", name));
  auto text = core::read_text_file(std::string(name_or_path), kMaxPlanBytes, "; a plan is a few KiB");
  if (!text)
    return fail("{}; '{}' is not a preset either (quick, standard, full)", text.error().message, name_or_path);
  return parse_plan(*text, name_or_path);
}

}  // namespace cmax::campaign
