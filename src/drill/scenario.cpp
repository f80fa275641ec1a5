#include "drill/scenario.h"

#include <fmt/format.h>

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "signals/classify.h"

namespace cmax::drill {

extern const char kDrillScenariosJson[];  // generated from data/drills.json

namespace {

using nlohmann::json;

constexpr std::string_view kSchema = "cmax.drill-scenarios/1";
constexpr std::size_t kMaxScenarios = 1000;
constexpr std::size_t kMaxIdChars = 32;
constexpr std::size_t kMaxTitleChars = 200;
constexpr int kMaxLevel = 7;
constexpr std::string_view kCommPrefix = "cmaxdrill-";

// Where each fault can happen. A table, so a new platform is one line here and one in the docs.
constexpr std::array<std::string_view, 2> kPlatforms{"hgx", "nvl72"};

enum Placeholder : std::size_t {
  kGpu,
  kGpuFn,
  kBridge,
  kNvswitch,
  kIb,
  kIbFn,
  kNetdev,
  kCpu,
  kServer,
  kComm,
  kPid,
  kPlaceholderCount
};
constexpr std::array<std::string_view, kPlaceholderCount> kPlaceholders{
    "gpu", "gpu_fn", "bridge", "nvswitch", "ib", "ib_fn", "netdev", "cpu", "server", "comm", "pid"};

using Values = std::array<std::string, kPlaceholderCount>;

// A byte the kernel hands back unchanged when /dev/kmsg or dmesg prints the line.
bool printable(char c) { return c >= 0x20 && c < 0x7f; }

// The value as it can be shown in an error message: clipped, control bytes as \xNN.
std::string shown(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 60)) {
    if (printable(c))
      out += c;
    else
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  }
  if (s.size() > 60) out += "...";
  return out;
}

std::string placeholder_list() {
  std::string out;
  for (auto p : kPlaceholders) out += fmt::format("{}{}{}{}", out.empty() ? "" : ", ", "{", p, "}");
  return out;
}

std::optional<std::size_t> placeholder_index(std::string_view name) {
  for (std::size_t i = 0; i < kPlaceholders.size(); ++i)
    if (kPlaceholders[i] == name) return i;
  return std::nullopt;
}

// Walks a template: literal(text) for each run of literal text (a doubled brace gives one brace),
// placeholder(index) for each {name}. The error says what is wrong and where, without a prefix.
template <class Literal, class Fill>
Result<void> walk(std::string_view t, Literal&& literal, Fill&& placeholder) {
  std::size_t start = 0;
  for (std::size_t i = 0; i < t.size();) {
    char c = t[i];
    if (c != '{' && c != '}') {
      ++i;
      continue;
    }
    literal(t.substr(start, i - start));
    if (i + 1 < t.size() && t[i + 1] == c) {  // "{{" or "}}": one literal brace
      literal(t.substr(i, 1));
      i += 2;
      start = i;
      continue;
    }
    if (c == '}')
      return fail("has a '}}' at byte {} that closes nothing; write {} for a literal brace", i,
                  "}}");
    auto close = t.find('}', i + 1);
    if (close == std::string_view::npos)
      return fail("has a '{{' at byte {} that is never closed; write {} for a literal brace", i,
                  "{{");
    std::string_view name = t.substr(i + 1, close - i - 1);
    auto index = placeholder_index(name);
    if (!index)
      return fail(
          "has an unknown placeholder {}{}{} at byte {}; the placeholders are {}, and {} {} are "
          "literal braces",
          "{", shown(name), "}", i, placeholder_list(), "{{", "}}");
    placeholder(*index);
    i = close + 1;
    start = i;
  }
  literal(t.substr(start));
  return ok();
}

// A template must be one line of printable ASCII with known placeholders and balanced braces.
Result<void> check_template(std::string_view t) {
  if (t.empty()) return fail("is empty; a step writes one kernel line");
  if (t.size() > kMaxTemplateBytes)
    return fail("is {} bytes; a template may hold at most {} (the kernel keeps {} of a line)",
                t.size(), kMaxTemplateBytes, kMaxLineBytes);
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (!printable(t[i]))
      return fail(
          "holds byte 0x{:02x} at byte {}; a step is one line of printable ASCII (write one step "
          "per line)",
          static_cast<unsigned char>(t[i]), i);
  }
  auto r = walk(
      t, [](std::string_view) {}, [](std::size_t) {});
  if (!r) return Unexpected<Error>{r.error()};
  return ok();
}

// Checks one target value: printable ASCII, none of the characters detectors split fields on, not
// too long.
// `label` names the value in messages: "{server}", or "drill id" for what is not a placeholder.
Result<void> check_value(std::string_view label, std::string_view v, std::size_t max_chars,
                         std::string_view extra_allowed) {
  if (v.empty()) return fail("drill target {} is empty; give it a value", label);
  for (char c : v) {
    if (!printable(c))
      return fail(
          "drill target {} '{}' holds byte 0x{:02x}; a kernel line is one line of printable ASCII, "
          "so a "
          "value may not hold a newline, a control character or a non-ASCII byte",
          label, shown(v), static_cast<unsigned char>(c));
  }
  for (char c : v) {
    bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '-' || c == '_' || c == '.' ||
                   extra_allowed.find(c) != std::string_view::npos;
    if (!allowed)
      return fail(
          "drill target {} '{}' holds '{}'; use letters, digits, '-', '_', '.'{}{} (detectors "
          "split the "
          "line's fields on the others)",
          label, shown(v), c, extra_allowed.empty() ? "" : " or any of ", extra_allowed);
  }
  if (v.size() > max_chars)
    return fail("drill target {} '{}' is {} characters; at most {}", label, shown(v), v.size(),
                max_chars);
  return ok();
}

Result<void> check_pci(std::string_view label, std::string_view v) {
  if (auto r = check_value(label, v, 16, ":"); !r) return r;
  if (!signals::is_pci(v) || signals::pci_without_function(v) == v)
    return fail(
        "drill target {} '{}' is not a PCI function address; write DDDD:BB:SS.F as `lspci -D` "
        "prints "
        "it (0000:3b:00.0)",
        label, shown(v));
  return ok();
}

// Checks the targets and computes every placeholder's text.
Result<Values> values_of(const Targets& t) {
  // {gpu} may be given as the Xid lines print it, without its function.
  std::string gpu_fn = t.gpu;
  if (signals::is_pci(gpu_fn) && signals::pci_without_function(gpu_fn) == gpu_fn) gpu_fn += ".0";
  const std::array<std::pair<std::string_view, std::string_view>, 4> pci{
      {{"{gpu}", gpu_fn},
       {"{bridge}", t.bridge},
       {"{nvswitch}", t.nvswitch},
       {"{ib_fn}", t.ib_fn}}};
  for (const auto& [label, value] : pci)
    if (auto r = check_pci(label, value); !r) return Unexpected<Error>{r.error()};
  if (auto r = check_value("{ib}", t.ib, 63, ""); !r) return Unexpected<Error>{r.error()};
  if (auto r = check_value("{netdev}", t.netdev, 15, ""); !r) return Unexpected<Error>{r.error()};
  // An NFS server is a host name or an address, IPv6 in brackets.
  if (auto r = check_value("{server}", t.server, 253, ":[]"); !r)
    return Unexpected<Error>{r.error()};
  std::string comm = t.comm;
  if (comm.empty()) {
    if (auto r = check_value("drill id", t.drill_id, 64, ""); !r)
      return Unexpected<Error>{r.error()};
    comm = std::string(kCommPrefix) + t.drill_id;
    if (comm.size() > kMaxCommChars)
      return fail(
          "drill target {} '{}' is {} characters; the kernel keeps {} of a process name, so a "
          "drill id may "
          "have at most {}",
          "{comm}", comm, comm.size(), kMaxCommChars, kMaxCommChars - kCommPrefix.size());
  } else if (auto r = check_value("{comm}", comm, 64, ""); !r) {
    return Unexpected<Error>{r.error()};
  } else if (comm.size() > kMaxCommChars) {
    return fail("drill target {} '{}' is {} characters; the kernel keeps {} of a process name",
                "{comm}", comm, comm.size(), kMaxCommChars);
  }
  if (t.cpu < 0 || t.cpu > 8191)
    return fail("drill target {} {} is not a CPU number; use 0 to 8191", "{cpu}", t.cpu);
  if (t.pid < 1 || t.pid > 4194304)
    return fail("drill target {} {} is not a process id; use 1 to 4194304", "{pid}", t.pid);

  Values v;
  v[kGpu] = std::string(signals::pci_without_function(gpu_fn));
  v[kGpuFn] = gpu_fn;
  v[kBridge] = t.bridge;
  v[kNvswitch] = t.nvswitch;
  v[kIb] = t.ib;
  v[kIbFn] = t.ib_fn;
  v[kNetdev] = t.netdev;
  v[kCpu] = std::to_string(t.cpu);
  v[kServer] = t.server;
  v[kComm] = std::move(comm);
  v[kPid] = std::to_string(t.pid);
  return v;
}

Result<std::string> fill(std::string_view t, const Values& values) {
  std::string out;
  out.reserve(t.size() + 32);
  auto r = walk(
      t, [&](std::string_view s) { out.append(s); }, [&](std::size_t i) { out.append(values[i]); });
  if (!r) return fail("the template {}", r.error().message);
  if (out.size() > kMaxLineBytes)
    return fail(
        "the line is {} bytes once filled in; the kernel keeps {} (use shorter target values)",
        out.size(), kMaxLineBytes);
  return out;
}

// Errors that name the file, then the scenario and key: read drill scenarios F: scenario 'x',
// steps[2].level: ...
class Reader {
 public:
  explicit Reader(std::string_view origin) : origin_(origin) {}

  template <class... Args>
  Unexpected<Error> error(std::string_view where, fmt::format_string<Args...> what,
                          Args&&... args) const {
    std::string detail = fmt::format(what, std::forward<Args>(args)...);
    if (where.empty()) return fail("read drill scenarios {}: {}", origin_, detail);
    return fail("read drill scenarios {}: {}: {}", origin_, where, detail);
  }

  // Every key of `j` must be one of `allowed`; each of `allowed` must be there.
  Result<void> keys(const json& j, std::string_view where,
                    std::initializer_list<std::string_view> allowed) const {
    std::string names;
    for (auto a : allowed) names += fmt::format("{}{}", names.empty() ? "" : ", ", a);
    for (const auto& item : j.items()) {
      bool known = false;
      for (auto a : allowed) known = known || a == item.key();
      if (!known)
        return error(where, "unknown key '{}'; the keys here are {}", shown(item.key()), names);
    }
    for (auto a : allowed)
      if (!j.contains(a)) return error(where, "'{}' is missing; the keys here are {}", a, names);
    return ok();
  }

  Result<std::string> text(const json& j, std::string_view where, std::string_view key) const {
    if (!j.is_string()) return error(where, "'{}' must be a string, not {}", key, j.type_name());
    return j.get<std::string>();
  }

  Result<int> integer(const json& j, std::string_view where, std::string_view key, int lo, int hi,
                      std::string_view hint) const {
    if (!j.is_number_integer() || j.get<long long>() < lo || j.get<long long>() > hi)
      return error(where, "'{}' is {}; {}", key, shown(j.dump()), hint);
    return static_cast<int>(j.get<long long>());
  }

 private:
  std::string_view origin_;
};

bool valid_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxIdChars || id.front() == '-') return false;
  for (char c : id)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

Result<Step> read_step(const Reader& r, const json& j, const std::string& where) {
  if (!j.is_object()) return r.error(where, "must be an object, not {}", j.type_name());
  if (auto k = r.keys(j, where, {"after_ms", "level", "line"}); !k)
    return Unexpected<Error>{k.error()};
  Step step;
  auto after = r.integer(
      j["after_ms"], where, "after_ms", 0, kMaxAfterMs,
      fmt::format("write the delay after the previous line in milliseconds, 0 to {}", kMaxAfterMs));
  if (!after) return Unexpected<Error>{after.error()};
  step.after_ms = *after;
  auto level = r.integer(j["level"], where, "level", 0, kMaxLevel,
                         "a kernel log level is 0 (emerg) to 7 (debug); write the one the real "
                         "driver logs the line at");
  if (!level) return Unexpected<Error>{level.error()};
  step.level = *level;
  auto line = r.text(j["line"], where, "line");
  if (!line) return Unexpected<Error>{line.error()};
  if (auto t = check_template(*line); !t) return r.error(where, "'line' {}", t.error().message);
  step.line = std::move(*line);
  return step;
}

Result<Scenario> read_scenario(const Reader& r, const json& j, std::size_t index,
                               const std::vector<Scenario>& earlier) {
  std::string where = fmt::format("scenarios[{}]", index);
  if (!j.is_object()) return r.error(where, "must be an object, not {}", j.type_name());
  Scenario s;
  // The id first, so every later error can name the scenario.
  if (!j.contains("id"))
    return r.error(where, "'id' is missing; every scenario needs an id such as \"xid79\"");
  auto id = r.text(j["id"], where, "id");
  if (!id) return Unexpected<Error>{id.error()};
  if (!valid_id(*id))
    return r.error(where,
                   "id '{}' is not valid; use 1 to {} lower-case letters, digits and '-', not "
                   "starting with '-'",
                   shown(*id), kMaxIdChars);
  where = fmt::format("scenario '{}'", *id);
  for (std::size_t i = 0; i < earlier.size(); ++i)
    if (earlier[i].id == *id)
      return r.error(where, "scenarios[{}] and scenarios[{}] have this id; ids must be unique", i,
                     index);
  s.id = std::move(*id);
  if (auto k = r.keys(j, where, {"id", "title", "platforms", "expect", "steps"}); !k)
    return Unexpected<Error>{k.error()};

  auto title = r.text(j["title"], where, "title");
  if (!title) return Unexpected<Error>{title.error()};
  if (title->empty() || title->size() > kMaxTitleChars)
    return r.error(where, "'title' must hold 1 to {} characters, not {}", kMaxTitleChars,
                   title->size());
  for (char c : *title)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return r.error(where, "'title' holds a control character; write it on one line");
  s.title = std::move(*title);

  const json& platforms = j["platforms"];
  std::string known;
  for (auto p : kPlatforms) known += fmt::format("{}{}", known.empty() ? "" : ", ", p);
  if (!platforms.is_array() || platforms.empty())
    return r.error(where, "'platforms' must be a non-empty array of platform names ({})", known);
  for (std::size_t i = 0; i < platforms.size(); ++i) {
    std::string at = fmt::format("platforms[{}]", i);
    auto p = r.text(platforms[i], where, at);
    if (!p) return Unexpected<Error>{p.error()};
    bool known_platform = false;
    for (auto k : kPlatforms) known_platform = known_platform || k == *p;
    if (!known_platform)
      return r.error(where, "'{}' is '{}', not a platform; use {}", at, shown(*p), known);
    for (const auto& q : s.platforms)
      if (q == *p) return r.error(where, "'{}' lists '{}' twice", at, *p);
    s.platforms.push_back(std::move(*p));
  }

  auto expect = r.text(j["expect"], where, "expect");
  if (!expect) return Unexpected<Error>{expect.error()};
  auto action = signals::parse_action(*expect);
  if (!action)
    return r.error(
        where,
        "'expect' is '{}', not an action; use ignore, monitor, restart_app, reset_gpu, drain, "
        "reboot_node or replace",
        shown(*expect));
  s.expect = *action;

  const json& steps = j["steps"];
  if (!steps.is_array())
    return r.error(where, "'steps' must be an array, not {}", steps.type_name());
  if (steps.empty())
    return r.error(where, "'steps' is empty; a scenario writes at least one kernel line");
  if (steps.size() > kMaxSteps)
    return r.error(where, "'steps' holds {} steps; a scenario may hold at most {}", steps.size(),
                   kMaxSteps);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    auto step = read_step(r, steps[i], fmt::format("{}, steps[{}]", where, i));
    if (!step) return Unexpected<Error>{step.error()};
    s.steps.push_back(std::move(*step));
  }
  return s;
}

}  // namespace

std::span<const std::string_view> placeholder_names() { return kPlaceholders; }

Result<std::vector<Scenario>> parse_scenarios(std::string_view text, std::string_view origin) {
  Reader r(origin);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    std::string_view what = e.what();
    if (auto close = what.find("] "); what.starts_with("[json.") && close != std::string_view::npos)
      what.remove_prefix(close + 2);
    return r.error("", "not valid JSON ({}); check the file with a JSON validator", what);
  }
  if (!doc.is_object()) return r.error("", "must be a JSON object, not {}", doc.type_name());
  if (!doc.contains("schema") || doc["schema"] != kSchema)
    return r.error("schema", "must be \"{}\"; add that key to the top object", kSchema);
  if (auto k = r.keys(doc, "", {"schema", "scenarios"}); !k) return Unexpected<Error>{k.error()};
  const json& list = doc["scenarios"];
  if (!list.is_array()) return r.error("scenarios", "must be an array, not {}", list.type_name());
  if (list.empty())
    return r.error("scenarios", "is empty; a scenario file holds at least one scenario");
  if (list.size() > kMaxScenarios)
    return r.error("scenarios", "holds {} scenarios; a file may hold at most {}", list.size(),
                   kMaxScenarios);
  std::vector<Scenario> out;
  out.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto s = read_scenario(r, list[i], i, out);
    if (!s) return Unexpected<Error>{s.error()};
    out.push_back(std::move(*s));
  }
  return out;
}

Result<std::vector<Scenario>> builtin_scenarios() {
  return parse_scenarios(kDrillScenariosJson, "built-in data/drills.json");
}

const Scenario* find_scenario(const std::vector<Scenario>& scenarios, std::string_view id) {
  for (const auto& s : scenarios)
    if (s.id == id) return &s;
  return nullptr;
}

Result<void> validate_targets(const Targets& targets) {
  auto v = values_of(targets);
  if (!v) return Unexpected<Error>{v.error()};
  return ok();
}

Result<std::string> render_line(std::string_view line_template, const Targets& targets) {
  if (auto t = check_template(line_template); !t)
    return fail("render drill line '{}': the template {}", shown(line_template), t.error().message);
  auto values = values_of(targets);
  if (!values) return Unexpected<Error>{values.error()};
  auto line = fill(line_template, *values);
  if (!line) return fail("render drill line '{}': {}", shown(line_template), line.error().message);
  return line;
}

Result<std::vector<Step>> render(const Scenario& scenario, const Targets& targets) {
  auto values = values_of(targets);
  if (!values) return fail("render drill scenario '{}': {}", scenario.id, values.error().message);
  std::vector<Step> out;
  out.reserve(scenario.steps.size());
  for (std::size_t i = 0; i < scenario.steps.size(); ++i) {
    const Step& step = scenario.steps[i];
    auto line = fill(step.line, *values);
    if (!line)
      return fail("render drill scenario '{}', steps[{}]: {}", scenario.id, i,
                  line.error().message);
    out.push_back(Step{step.after_ms, step.level, std::move(*line)});
  }
  return out;
}

}  // namespace cmax::drill
