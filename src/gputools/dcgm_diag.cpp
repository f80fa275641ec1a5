#include "gputools/dcgm_diag.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/strings.h"

namespace cmax::gputools {

namespace {

// dcgmi wraps Warning/Info text into 45-character pieces (DATA_INFO_TAG_LEN in Diag.cpp's
// DisplayVerboseInfo), each printed after one space in a 48-wide cell. Pieces are cut mid-word
// and may begin or end with the space between two words, so they are joined untrimmed.
constexpr std::size_t kInfoChunk = 45;

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// How bad a status is, for a test's overall status from several rows or entities.
int rank(DiagStatus s) {
  switch (s) {
    case DiagStatus::fail: return 5;
    case DiagStatus::warn: return 4;
    case DiagStatus::pass: return 3;
    case DiagStatus::skip: return 2;
    case DiagStatus::not_run: return 1;
    case DiagStatus::unknown: break;
  }
  return 0;
}

DiagStatus worse(DiagStatus a, DiagStatus b) { return rank(a) >= rank(b) ? a : b; }

// "GPU0: Pass" (4.x entity row): entity "GPU0", gpu 0.
std::optional<DcgmEntityResult> entity_row(std::string_view t) {
  const auto colon = t.find(": ");
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  const auto entity = t.substr(0, colon);
  const auto digits = entity.find_first_of("0123456789");
  if (digits == std::string_view::npos || digits == 0) return std::nullopt;
  const auto id = core::parse_uint(entity.substr(digits));
  const auto word = core::trim(t.substr(colon + 2));
  const auto status = parse_diag_status(word);
  // The whole cell is the status ("Not Run" is the one with a space): wrapped text never is.
  if (!id || status == DiagStatus::unknown || (word.find(' ') != std::string_view::npos && status != DiagStatus::not_run))
    return std::nullopt;
  DcgmEntityResult r;
  r.entity = std::string(entity);
  r.gpu = entity.substr(0, digits) == "GPU" ? static_cast<int>(*id) : -1;
  r.status = status;
  return r;
}

// "Pass - All", "Fail - GPUs: 0, 1   " (3.x per-test rows) -> status, all, and the GPU list.
struct StatusCell {
  DiagStatus status = DiagStatus::unknown;
  bool all = false;
  std::vector<int> gpus;
};

std::optional<StatusCell> status_cell(std::string_view t) {
  StatusCell c;
  const auto dash = t.find(" - ");
  c.status = parse_diag_status(dash == std::string_view::npos ? t : t.substr(0, dash));
  if (c.status == DiagStatus::unknown) return std::nullopt;
  if (dash == std::string_view::npos) return core::trim(t).find(' ') == std::string_view::npos ||
                                                     c.status == DiagStatus::not_run
                                                 ? std::optional(c)
                                                 : std::nullopt;
  auto rest = core::trim(t.substr(dash + 3));
  if (rest == "All") {
    c.all = true;
    return c;
  }
  if (!starts_with(rest, "GPU")) return std::nullopt;
  rest = rest.substr(rest.find(':') == std::string_view::npos ? rest.size() : rest.find(':') + 1);
  for (auto piece : core::split_any(rest, ", ")) {
    auto id = core::parse_uint(piece);
    if (!id) return std::nullopt;
    c.gpus.push_back(static_cast<int>(*id));
  }
  return c;
}

void apply(DcgmTest& test, const StatusCell& c) {
  test.overall = test.overall == DiagStatus::unknown ? c.status : worse(test.overall, c.status);
  test.all_gpus = test.all_gpus || c.all;
  for (int g : c.gpus) test.results.push_back({"GPU" + std::to_string(g), g, c.status, {}, {}});
}

void trim_all(std::vector<std::string>& v) {
  for (auto& s : v) s = std::string(core::trim(s));
}

}  // namespace

DiagStatus parse_diag_status(std::string_view s) {
  s = core::trim(s);
  const auto word = s.substr(0, s.find_first_of(" -"));
  const std::string w = core::to_lower(word);
  if (w == "pass" || w == "passed") return DiagStatus::pass;
  if (w == "fail" || w == "failed") return DiagStatus::fail;
  if (w == "warn" || w == "warning") return DiagStatus::warn;
  if (w == "skip" || w == "skipped") return DiagStatus::skip;
  if (core::to_lower(s.substr(0, 7)) == "not run") return DiagStatus::not_run;
  return DiagStatus::unknown;
}

std::string_view diag_status_name(DiagStatus s) {
  switch (s) {
    case DiagStatus::pass: return "pass";
    case DiagStatus::fail: return "fail";
    case DiagStatus::warn: return "warn";
    case DiagStatus::skip: return "skip";
    case DiagStatus::not_run: return "not_run";
    case DiagStatus::unknown: break;
  }
  return "unknown";
}

Result<DcgmDiag> parse_dcgm_diag_text(std::string_view text) {
  DcgmDiag out;
  std::string section;
  bool table = false;
  std::string* open_text = nullptr;  // the Warning/Info text that continuation rows extend
  DcgmEntityResult* entity = nullptr;  // 4.x: the entity whose Warning rows follow
  for (auto raw : core::split_lines(text)) {
    const auto line = core::trim(raw);
    if (!table) {
      table = starts_with(line, "|") && line.find("Diagnostic") != std::string_view::npos &&
              line.find("Result") != std::string_view::npos;
      continue;
    }
    if (line.size() < 2 || (line[0] != '|' && line[0] != '+')) continue;
    // "|-----  Metadata  ------+----|" and "+-----  Stress  ----+----+": a section; "+----+" a border.
    if (line[1] == '-' || line[1] == '=') {
      std::string name;
      for (char c : line.substr(0, line.find_first_of("+|", 1)))
        if (c != '-' && c != '=' && c != '|' && c != '+') name += c;
      if (!core::trim(name).empty()) section = std::string(core::trim(name));
      open_text = nullptr;
      continue;
    }
    const auto bar = line.find('|', 1);
    const auto last = line.rfind('|');
    if (line[0] != '|' || bar == std::string_view::npos || last <= bar) {
      out.errors.push_back("unreadable row: " + core::clip(line, 120));
      continue;
    }
    const auto name = core::trim(line.substr(1, bar - 1));
    const auto cell = line.substr(bar + 1, last - bar - 1);
    const auto value = core::trim(cell);
    const auto chunk = cell.size() > 1 ? cell.substr(1, kInfoChunk) : std::string_view{};
    if (section == "Metadata") {
      if (name == "DCGM Version") out.dcgm_version = std::string(value);
      else if (name == "Driver Version Detected") out.driver_version = std::string(value);
      else if (name == "GPU Device IDs Detected")
        for (auto id : core::split_any(value, ", ")) out.device_ids.emplace_back(id);
      continue;
    }
    if (name == "Warning" || name == "Info") {
      if (out.tests.empty()) {
        out.errors.push_back(std::string(name) + " before any test: " + std::string(value));
        open_text = nullptr;
        continue;
      }
      auto& list = entity ? (name == "Warning" ? entity->warnings : entity->info)
                          : (name == "Warning" ? out.tests.back().warnings : out.tests.back().info);
      list.emplace_back(chunk);
      open_text = &list.back();
      continue;
    }
    if (!name.empty()) {
      DcgmTest test;
      test.category = section;
      test.name = std::string(name);
      if (auto c = status_cell(value)) apply(test, *c);
      else out.errors.push_back("test " + test.name + ": unreadable result '" + std::string(value) + "'");
      out.tests.push_back(std::move(test));
      open_text = nullptr;
      entity = nullptr;
      continue;
    }
    // An unnamed row: a 4.x entity result, a 3.x further "<status> - GPUs: ..." row, or wrapped text.
    if (!out.tests.empty()) {
      auto& test = out.tests.back();
      if (auto e = entity_row(value)) {
        test.results.push_back(std::move(*e));
        entity = &test.results.back();
        open_text = nullptr;
        continue;
      }
      if (auto c = status_cell(value); c && !c->gpus.empty()) {
        apply(test, *c);
        open_text = nullptr;
        entity = nullptr;
        continue;
      }
    }
    if (open_text) {
      *open_text += chunk;
      continue;
    }
    if (!value.empty()) out.errors.push_back("unreadable row: " + core::clip(line, 120));
  }
  if (!table)
    return fail("read dcgmi diag output: no '| Diagnostic | Result |' table; pass the output of `dcgmi diag -r N` "
                "unchanged, or use -j");
  for (auto& t : out.tests) {
    trim_all(t.warnings);
    trim_all(t.info);
    for (auto& e : t.results) trim_all(e.warnings), trim_all(e.info);
  }
  return out;
}

namespace {

using nlohmann::json;

std::string json_text(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number()) return j.dump();
  return {};
}

// "warnings": [{"warning": "..."}] per Diag.cpp; 3.3's deployment tests wrote the message under
// "warnings" inside the entry (Diag.cpp@903d745 HelperJsonAddBasicTests), so both keys are read.
std::vector<std::string> json_warnings(const json& j) {
  std::vector<std::string> out;
  auto it = j.find("warnings");
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& w : *it) {
    if (w.is_string()) out.push_back(w.get<std::string>());
    else if (w.is_object()) out.push_back(json_text(w.value("warning", w.value("warnings", json()))));
  }
  return out;
}

// "info" is one string in 3.x and an array of strings in 4.x.
std::vector<std::string> json_info(const json& j) {
  std::vector<std::string> out;
  auto it = j.find("info");
  if (it == j.end()) return out;
  if (it->is_string()) out.push_back(it->get<std::string>());
  if (it->is_array())
    for (const auto& i : *it) out.push_back(json_text(i));
  return out;
}

DcgmTest json_test(const json& t, const std::string& category) {
  DcgmTest test;
  test.category = category;
  test.name = json_text(t.value("name", json()));
  DiagStatus worst = DiagStatus::unknown;
  if (auto it = t.find("results"); it != t.end() && it->is_array())
    for (const auto& r : *it) {
      DcgmEntityResult e;
      e.status = parse_diag_status(json_text(r.value("status", json())));
      e.warnings = json_warnings(r);
      e.info = json_info(r);
      worst = worst == DiagStatus::unknown ? e.status : worse(worst, e.status);
      if (r.contains("entity_id")) {  // 4.x
        const std::string group = json_text(r.value("entity_group", json("GPU")));
        e.entity = group + json_text(r["entity_id"]);
        if (group == "GPU") e.gpu = std::stoi(json_text(r["entity_id"]));
      } else if (r.contains("gpu_id")) {  // 3.x: a string per GPU, a number on deployment errors
        e.entity = "GPU" + json_text(r["gpu_id"]);
        if (auto id = core::parse_uint(json_text(r["gpu_id"]))) e.gpu = static_cast<int>(*id);
      } else {  // a 3.x deployment test's single, entity-less result belongs to the test
        test.warnings.insert(test.warnings.end(), e.warnings.begin(), e.warnings.end());
        test.info.insert(test.info.end(), e.info.begin(), e.info.end());
        continue;
      }
      test.results.push_back(std::move(e));
    }
  // 4.x "test_summary" is the test's overall result with every error of the test in it.
  if (auto it = t.find("test_summary"); it != t.end() && it->is_object()) {
    test.overall = parse_diag_status(json_text(it->value("status", json())));
    auto w = json_warnings(*it);
    auto i = json_info(*it);
    test.warnings.insert(test.warnings.end(), w.begin(), w.end());
    test.info.insert(test.info.end(), i.begin(), i.end());
  } else {
    // Diag.cpp records no entry for a result that did not run.
    test.overall = worst == DiagStatus::unknown ? DiagStatus::not_run : worst;
  }
  return test;
}

void json_iteration(const json& root, DcgmDiag& out, const std::string& suffix) {
  const json* diag = nullptr;
  for (const char* key : {"DCGM Diagnostic", "DCGM GPU Diagnostic"})
    if (auto it = root.find(key); it != root.end() && it->is_object()) diag = &*it;
  if (!diag) {
    out.errors.push_back("no \"DCGM Diagnostic\" object" + suffix);
    return;
  }
  if (auto it = diag->find("runtime_error"); it != diag->end()) out.runtime_error = json_text(*it);
  const json& meta = root.contains("metadata") ? root["metadata"] : root;  // 4.x : 3.x
  if (out.dcgm_version.empty()) out.dcgm_version = json_text(meta.value("version", diag->value("version", json())));
  if (out.driver_version.empty()) out.driver_version = json_text(meta.value("Driver Version Detected", json()));
  if (auto it = root.find("GPU Device IDs"); it != root.end() && it->is_array() && out.device_ids.empty())
    for (const auto& id : *it) out.device_ids.push_back(json_text(id));
  if (auto it = root.find("entity_groups"); it != root.end() && it->is_array() && out.device_ids.empty())
    for (const auto& g : *it)
      if (json_text(g.value("entity_group", json())) == "GPU" && g.contains("entities") && g["entities"].is_array())
        for (const auto& e : g["entities"]) out.device_ids.push_back(json_text(e.value("device_id", json())));
  auto cats = diag->find("test_categories");
  if (cats == diag->end() || !cats->is_array()) return;
  for (const auto& c : *cats) {
    if (!c.is_object()) continue;
    const std::string category = json_text(c.value("category", json()));
    if (auto tests = c.find("tests"); tests != c.end() && tests->is_array())
      for (const auto& t : *tests) {
        if (!t.is_object()) continue;  // Diag.cpp leaves null where a test had no entry
        out.tests.push_back(json_test(t, category));
        out.tests.back().name += suffix;
      }
  }
}

}  // namespace

Result<DcgmDiag> parse_dcgm_diag_json(std::string_view text) {
  const auto open = text.find('{');
  const auto close = text.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return fail("read dcgmi diag -j output: no JSON object; rerun `dcgmi diag -r N -j` and pass its stdout");
  json doc = json::parse(text.substr(open, close - open + 1), nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return fail("read dcgmi diag -j output: malformed JSON (cut short?); rerun and pass the complete stdout");
  DcgmDiag out;
  try {
    if (auto it = doc.find("iterations"); it != doc.end() && it->is_array()) {
      for (std::size_t i = 0; i < it->size(); ++i)
        json_iteration((*it)[i], out, i ? " (iteration " + std::to_string(i + 1) + ")" : "");
    } else {
      json_iteration(doc, out, "");
    }
  } catch (const std::exception& e) {  // a value of an unexpected type deep inside
    return fail("read dcgmi diag -j output: {}; rerun and pass the complete stdout", e.what());
  }
  if (out.tests.empty() && out.runtime_error.empty() && !out.errors.empty())
    return fail("read dcgmi diag -j output: {}; this is not dcgmi diag -j output", out.errors.front());
  return out;
}

Result<DcgmDiag> parse_dcgm_diag(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') return parse_dcgm_diag_json(text);
  return parse_dcgm_diag_text(text);
}

}  // namespace cmax::gputools
