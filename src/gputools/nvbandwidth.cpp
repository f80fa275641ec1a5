#include "gputools/nvbandwidth.h"

#include <charconv>

#include <nlohmann/json.hpp>

#include "core/strings.h"

namespace cmax::gputools {

namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::optional<double> parse_double(std::string_view s) {
  s = core::trim(s);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// "Device 0: NVIDIA A100-SXM4-80GB (00000000:34:00)" (text) or, without the "Device " prefix,
// "0: NVIDIA H100 (00000000:1b:00): (host)" (the JSON "GPU Device list").
std::optional<NvbDevice> parse_device(std::string_view s) {
  if (starts_with(s, "Device ")) s.remove_prefix(7);
  const auto colon = s.find(": ");
  if (colon == std::string_view::npos) return std::nullopt;
  auto index = core::parse_uint(s.substr(0, colon));
  if (!index) return std::nullopt;
  NvbDevice d;
  d.index = static_cast<int>(*index);
  std::string_view rest = core::trim(s.substr(colon + 2));
  const auto open = rest.find(" (");
  const auto close = open == std::string_view::npos ? open : rest.find(')', open);
  if (close != std::string_view::npos) {
    d.bus_id = std::string(rest.substr(open + 2, close - open - 2));
    rest = rest.substr(0, open);
  }
  d.name = std::string(core::trim(rest));
  return d;
}

// Text mode prints a testcase's error as "Error: <what>" after "Running <name>.", but CUDA and
// ASSERT failures go to stderr in nvbandwidth's own words and usually end the process.
bool is_error_line(std::string_view t) {
  return starts_with(t, "[") || starts_with(t, "ASSERT") || starts_with(t, "NVML_ERROR") ||
         starts_with(t, "Error") || starts_with(t, "ERROR") || starts_with(t, "Invalid value") ||
         starts_with(t, "Current offset");
}

void append(std::string& to, std::string_view what) {
  if (!to.empty()) to += ' ';
  to += what;
}

// The matrix of one testcase, as inline_common.h prints it: a header of column labels, then one row
// per source (label, then a value or "N/A" per column), ending at a blank line.
struct MatrixReader {
  NvbTestcase* tc = nullptr;
  bool header_read = false;
  void header(std::string_view t) {
    for (auto w : core::split_any(t, " \t")) tc->column_labels.emplace_back(w);
    header_read = true;
  }
  bool row(std::string_view t, std::vector<std::string>& errors) {
    auto words = core::split_any(t, " \t");
    if (words.size() != tc->column_labels.size() + 1) return false;
    std::vector<std::optional<double>> cells;
    for (std::size_t i = 1; i < words.size(); ++i) {
      if (words[i] == "N/A") {
        cells.emplace_back();
        continue;
      }
      auto v = parse_double(words[i]);
      if (!v) {
        errors.push_back("testcase " + tc->name + ": unreadable matrix cell '" + std::string(words[i]) + "'");
        return false;
      }
      cells.push_back(v);
    }
    tc->row_labels.emplace_back(words[0]);
    tc->matrix.push_back(std::move(cells));
    return true;
  }
};

}  // namespace

NvbMatrixKind nvb_matrix_kind(std::string_view d) {
  if (core::contains_icase(d, "latency") || d.find("(ns)") != std::string_view::npos) return NvbMatrixKind::latency;
  if (d.find("CPU(row)") != std::string_view::npos || d.find("CPU(column)") != std::string_view::npos)
    return NvbMatrixKind::host_device;
  if (d.find("GPU(row)") != std::string_view::npos && d.find("GPU(column)") != std::string_view::npos)
    return NvbMatrixKind::device_device;
  return NvbMatrixKind::unknown;
}

std::string_view nvb_status_name(NvbStatus s) {
  switch (s) {
    case NvbStatus::passed: return "Passed";
    case NvbStatus::waived: return "Waived";
    case NvbStatus::error: return "Error";
    case NvbStatus::not_found: return "Not Found";
  }
  return "?";
}

Result<Nvbandwidth> parse_nvbandwidth_text(std::string_view text) {
  Nvbandwidth out;
  NvbTestcase* tc = nullptr;  // the testcase whose output is being read
  MatrixReader matrix;
  bool in_matrix = false, seen_version = false;
  for (auto raw : core::split_lines(text)) {
    const auto t = core::trim(raw);
    if (t.empty()) {
      in_matrix = false;
      continue;
    }
    if (auto v = core::parse_key_value(t, ':'); v && !starts_with(t, "[")) {
      if (v->key == "nvbandwidth Version") {
        out.version = std::string(v->value);
        seen_version = true;
        continue;
      }
      if (v->key == "Built from Git version") { out.git_version = std::string(v->value); continue; }
      if (v->key == "CUDA Runtime Version") { out.cuda_runtime = std::string(v->value); continue; }
      if (v->key == "CUDA Driver Version") { out.cuda_driver = std::string(v->value); continue; }
      if (v->key == "Driver Version") { out.driver = std::string(v->value); continue; }
      if (v->key == "Waived") {
        // Text mode prints "Waived: " with no name (nvbandwidth.cpp addTestcase).
        out.testcases.push_back({.name = "", .status = NvbStatus::waived});
        tc = nullptr;
        continue;
      }
    }
    if (starts_with(t, "Device ")) {
      if (auto d = parse_device(t)) {
        out.devices.push_back(std::move(*d));
        continue;
      }
    }
    if (starts_with(t, "Running ") && t.back() == '.') {
      out.testcases.push_back({.name = std::string(t.substr(8, t.size() - 9))});
      tc = &out.testcases.back();
      in_matrix = false;
      continue;
    }
    if (starts_with(t, "NOTE:") || starts_with(t, "Performance can vary")) continue;
    if (tc && (starts_with(t, "SUM ") || starts_with(t, "MIN ") || starts_with(t, "MAX ") || starts_with(t, "AVG "))) {
      auto words = core::split_any(t, " \t");
      auto v = words.size() == 3 ? parse_double(words[2]) : std::nullopt;
      if (!v) {
        out.errors.push_back("unreadable line: " + core::clip(t, 160));
        continue;
      }
      (words[0] == "SUM" ? tc->sum_gbps : words[0] == "MIN" ? tc->min : words[0] == "MAX" ? tc->max : tc->average) = v;
      continue;
    }
    if (tc && t.find("(row)") != std::string_view::npos && t.find("(column)") != std::string_view::npos) {
      tc->description = std::string(t);
      tc->kind = nvb_matrix_kind(t);
      matrix = MatrixReader{tc};
      in_matrix = true;
      continue;
    }
    if (tc && in_matrix) {
      if (!matrix.header_read) {
        matrix.header(t);
        continue;
      }
      if (matrix.row(t, out.errors)) continue;
      in_matrix = false;
    }
    if (tc && is_error_line(t)) {
      // "Error: <msg>" is nvbandwidth's own status line; the rest is stderr text of a failure.
      tc->status = NvbStatus::error;
      append(tc->error, starts_with(t, "Error: ") ? t.substr(7) : t);
      continue;
    }
    // v0.8 prints the host name alone on a line above the device list.
    if (!tc && out.devices.empty() && out.hostname.empty() && seen_version && t.find_first_of(" \t:") == std::string_view::npos) {
      out.hostname = std::string(t);
      continue;
    }
    if (tc) {
      tc->status = NvbStatus::error;
      append(tc->error, t);
    } else {
      out.errors.emplace_back(core::clip(t, 400));
    }
  }
  if (!seen_version && out.testcases.empty())
    return fail("read nvbandwidth output: no 'nvbandwidth Version' line and no 'Running <testcase>.' line; "
                "pass the output of nvbandwidth unchanged");
  return out;
}

Result<Nvbandwidth> parse_nvbandwidth(std::string_view text) {
  if (text.find("\"nvbandwidth\"") != std::string_view::npos) return parse_nvbandwidth_json(text);
  return parse_nvbandwidth_text(text);
}

namespace {

using nlohmann::json;

std::string json_text(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number()) return j.dump();
  return {};
}

std::optional<double> json_number(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) return parse_double(j.get<std::string>());
  return std::nullopt;
}

NvbStatus json_status(std::string_view s) {
  if (s == "Passed") return NvbStatus::passed;
  if (s == "Waived") return NvbStatus::waived;
  if (s == "Not Found") return NvbStatus::not_found;
  return NvbStatus::error;  // "Error", "ERROR" and anything this parser does not know
}

// One entry of "testcases" (json_output.cpp): name, status, and for a run testcase the matrix of
// strings ("12.3964" or "N/A"), sum, and with -v min/max/average; "error" where it failed.
NvbTestcase json_testcase(const json& j, std::vector<std::string>& errors) {
  NvbTestcase tc;
  tc.name = json_text(j.value("name", json()));
  tc.status = json_status(json_text(j.value("status", json("Passed"))));
  tc.description = std::string(core::trim(json_text(j.value("bandwidth_description", json()))));
  tc.kind = nvb_matrix_kind(tc.description);
  if (auto it = j.find("bandwidth_matrix"); it != j.end() && it->is_array()) {
    for (const auto& row : *it) {
      std::vector<std::optional<double>> cells;
      if (row.is_array())
        for (const auto& cell : row) {
          auto v = json_number(cell);
          if (!v && json_text(cell) != "N/A")
            errors.push_back("testcase " + tc.name + ": unreadable matrix cell " + cell.dump());
          cells.push_back(v);
        }
      tc.row_labels.push_back(std::to_string(tc.matrix.size()));
      tc.matrix.push_back(std::move(cells));
    }
    const std::size_t columns = tc.matrix.empty() ? 0 : tc.matrix.front().size();
    for (std::size_t c = 0; c < columns; ++c) tc.column_labels.push_back(std::to_string(c));
  }
  if (auto it = j.find("sum"); it != j.end()) tc.sum_gbps = json_number(*it);
  if (auto it = j.find("min"); it != j.end()) tc.min = json_number(*it);
  if (auto it = j.find("max"); it != j.end()) tc.max = json_number(*it);
  if (auto it = j.find("average"); it != j.end()) tc.average = json_number(*it);
  if (auto it = j.find("error"); it != j.end()) {
    tc.error = json_text(*it);
    if (!tc.error.empty()) tc.status = NvbStatus::error;
  }
  return tc;
}

}  // namespace

Result<Nvbandwidth> parse_nvbandwidth_json(std::string_view text) {
  // stderr (CUDA errors) may surround the object when both streams were captured together.
  const auto open = text.find('{');
  const auto close = text.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return fail("read nvbandwidth -j output: no JSON object; rerun with `nvbandwidth -j` and pass its stdout");
  json doc = json::parse(text.substr(open, close - open + 1), nullptr, false);
  if (doc.is_discarded())
    return fail("read nvbandwidth -j output: malformed JSON (cut short?); rerun and pass the complete stdout");
  auto root = doc.find("nvbandwidth");
  if (root == doc.end() || !root->is_object())
    return fail("read nvbandwidth -j output: no \"nvbandwidth\" object; this is not nvbandwidth -j output");
  const json& n = *root;
  Nvbandwidth out;
  out.version = json_text(n.value("version", json()));
  out.git_version = json_text(n.value("git_version", json()));
  out.cuda_runtime = json_text(n.value("CUDA Runtime Version", json()));
  out.driver = json_text(n.value("Driver Version", json()));
  out.hostname = json_text(n.value("Hostname", json()));
  if (auto it = n.find("GPU Device list"); it != n.end() && it->is_array())
    for (const auto& d : *it)
      if (auto dev = parse_device(json_text(d))) out.devices.push_back(std::move(*dev));
  if (auto it = n.find("testcases"); it != n.end() && it->is_array())
    for (const auto& t : *it)
      if (t.is_object()) out.testcases.push_back(json_testcase(t, out.errors));
  if (auto it = n.find("error"); it != n.end()) out.errors.push_back(json_text(*it));
  if (auto it = n.find("warning"); it != n.end()) out.errors.push_back("warning: " + json_text(*it));
  return out;
}

}  // namespace cmax::gputools
