#include "audit/parse/platform.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/strings.h"

namespace cmax::audit {
namespace {

// "key\t: value" -> {key, value}; nullopt when the line has no colon.
std::optional<core::KeyValue> colon_pair(std::string_view line) {
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  return core::KeyValue{core::trim(line.substr(0, colon)), core::trim(line.substr(colon + 1))};
}

}  // namespace

CpuInfo parse_cpuinfo(std::string_view text) {
  CpuInfo info;
  bool arm = false, x86 = false, have_flags = false;
  for (auto line : core::split_lines(text)) {
    auto kv = colon_pair(line);
    if (!kv) continue;
    if (kv->key == "vendor_id") x86 = true;
    if (kv->key == "CPU implementer" || kv->key == "CPU architecture") arm = true;
    if (kv->key == "model name" && info.model_name.empty()) info.model_name = std::string(kv->value);
    if ((kv->key == "flags" || kv->key == "Features") && !have_flags) {
      have_flags = true;
      for (auto f : core::split_any(kv->value, " \t")) info.flags.emplace(f);
    }
  }
  if (x86 || info.flags.count("lm")) info.arch = "x86_64";
  else if (arm) info.arch = "aarch64";
  return info;
}

std::optional<std::size_t> count_cpulist(std::string_view cpulist) {
  std::size_t n = 0;
  for (auto part : core::split_any(core::trim(cpulist), ",")) {
    auto dash = part.find('-');
    auto lo = core::parse_uint(part.substr(0, dash));
    if (!lo) return std::nullopt;
    if (dash == std::string_view::npos) {
      ++n;
      continue;
    }
    auto hi = core::parse_uint(part.substr(dash + 1));
    if (!hi || *hi < *lo || *hi - *lo > (1u << 20)) return std::nullopt;
    n += static_cast<std::size_t>(*hi - *lo + 1);
  }
  return n;
}

std::optional<std::uint64_t> parse_node_memtotal_kb(std::string_view meminfo) {
  for (auto line : core::split_lines(meminfo)) {
    auto at = line.find("MemTotal:");
    if (at == std::string_view::npos) continue;
    auto rest = core::trim(line.substr(at + 9));
    auto space = rest.find(' ');
    return core::parse_uint(rest.substr(0, space));
  }
  return std::nullopt;
}

std::map<std::string, std::string, std::less<>> parse_nvidia_params(std::string_view text) {
  std::map<std::string, std::string, std::less<>> out;
  for (auto line : core::split_lines(text)) {
    auto kv = colon_pair(line);
    if (!kv || kv->key.empty()) continue;
    out[std::string(kv->key)] = std::string(core::unquote(kv->value));
  }
  return out;
}

std::map<std::string, std::string, std::less<>> parse_modprobe_options(std::string_view text) {
  std::map<std::string, std::string, std::less<>> out;
  std::string logical;
  auto flush = [&] {
    auto words = core::split_any(logical, " \t");
    if (words.size() >= 3 && words[0] == "options") {
      std::string module(words[1]);
      for (std::size_t i = 2; i < words.size(); ++i) {
        auto eq = words[i].find('=');
        std::string name(words[i].substr(0, eq));
        std::string value = eq == std::string_view::npos ? std::string() : std::string(core::unquote(words[i].substr(eq + 1)));
        // modprobe treats '-' and '_' in module and parameter names alike.
        for (auto* s : {&module, &name})
          for (auto& c : *s)
            if (c == '-') c = '_';
        out[module + "." + name] = value;
      }
    }
    logical.clear();
  };
  for (auto line : core::split_lines(text)) {
    auto hash = line.find('#');
    auto body = core::trim(line.substr(0, hash));
    bool cont = !body.empty() && body.back() == '\\';
    if (cont) body.remove_suffix(1);
    logical += " ";
    logical += body;
    if (!cont) flush();
  }
  flush();
  return out;
}

std::map<std::string, MlxconfigValue, std::less<>> parse_mlxconfig_query(std::string_view text) {
  std::map<std::string, MlxconfigValue, std::less<>> out;
  bool in_table = false, seen_device = false;
  int value_column = 0;  // which value column holds the current setting
  for (auto raw : core::split_lines(text)) {
    auto line = core::trim(raw);
    if (line.starts_with("Device #")) {
      if (seen_device) break;  // only the first device
      seen_device = true;
      in_table = false;
      continue;
    }
    if (line.starts_with("Configurations:")) {
      in_table = true;
      auto header = core::split_any(line.substr(15), " \t");
      // "Default Current Next Boot" (-e) -> the current value is the second column.
      value_column = (!header.empty() && header[0] == "Default") ? 1 : 0;
      continue;
    }
    if (!in_table || line.empty()) continue;
    auto words = core::split_any(line, " \t");
    if (!words.empty() && words[0] == "*") words.erase(words.begin());  // modified marker
    if (words.size() < 2) continue;
    std::string_view name = words[0];
    bool upper = !name.empty();
    for (char c : name) upper = upper && ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '[' || c == ']');
    if (!upper) {
      in_table = false;
      continue;
    }
    std::size_t idx = 1 + static_cast<std::size_t>(value_column);
    if (idx >= words.size()) idx = words.size() - 1;
    std::string_view v = words[idx];
    MlxconfigValue val;
    auto open = v.find('(');
    if (open != std::string_view::npos && v.back() == ')') {
      val.label = std::string(v.substr(0, open));
      if (auto n = core::parse_int(v.substr(open + 1, v.size() - open - 2))) val.number = *n;
    } else if (auto n = core::parse_int(v)) {
      val.number = *n;
    } else {
      val.label = std::string(v);
    }
    out[std::string(name)] = std::move(val);
  }
  return out;
}

std::optional<std::string> parse_virtnet_running_version(std::string_view text) {
  auto doc = nlohmann::json::parse(text, nullptr, false);
  // Some releases print the objects without the enclosing brackets: {...}, {...}
  if (doc.is_discarded()) doc = nlohmann::json::parse(fmt::format("[{}]", text), nullptr, false);
  if (doc.is_discarded()) return std::nullopt;
  std::optional<std::string> found;
  auto visit = [&](const nlohmann::json& obj) {
    if (!obj.is_object()) return;
    for (const char* key : {"Original Controller", "original_controller", "Controller"})
      if (!found && obj.contains(key) && obj[key].is_string()) found = obj[key].get<std::string>();
  };
  if (doc.is_array())
    for (const auto& e : doc) visit(e);
  else
    visit(doc);
  if (!found) return std::nullopt;
  std::string v(core::trim(*found));
  if (!v.empty() && (v[0] == 'v' || v[0] == 'V')) v.erase(0, 1);
  if (v.empty()) return std::nullopt;
  return v;
}

std::vector<BoostSlider> parse_boost_slider_list(std::string_view text) {
  // Table rows: "|   0  vboost  0  4  |" (the pipes are optional); a GPU index, a slider
  // name, then its current and maximum values.
  std::vector<BoostSlider> out;
  for (auto raw : core::split_lines(text)) {
    std::string line(raw);
    for (auto& c : line)
      if (c == '|') c = ' ';
    auto words = core::split_any(line, " \t");
    if (words.size() < 2 || !core::parse_uint(words[0])) continue;
    std::string_view name = words[1];
    if (core::parse_int(name) || name.find_first_of("=-+") != std::string_view::npos) continue;
    BoostSlider s{std::string(words[0]), core::to_lower(name), std::nullopt, std::nullopt};
    if (words.size() > 2) s.value = core::parse_int(words[2]);
    if (words.size() > 3) s.max = core::parse_int(words[3]);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace cmax::audit
