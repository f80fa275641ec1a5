#include "health/gpu_thresholds.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include "core/json_fields.h"

namespace cmax::health {

extern const char kBuiltinGpuThresholds[];  // generated from data/gpu-thresholds.json

namespace {

using nlohmann::json;

Result<GpuFloor> floor_of(const json& entry, const char* key, const std::string& where) {
  GpuFloor f;
  auto it = entry.find(key);
  if (it == entry.end() || it->is_null()) return f;
  if (!it->is_object()) return fail("{}: '{}' must be an object with fail_below / warn_below, or null", where, key);
  for (const char* k : {"fail_below", "warn_below", "spec"}) {
    auto v = it->find(k);
    if (v == it->end() || v->is_null()) continue;
    if (!v->is_number() || v->get<double>() < 0)
      return fail("{}: '{}.{}' must be a non-negative number", where, key, k);
    (std::string_view(k) == "fail_below" ? f.fail_below : std::string_view(k) == "warn_below" ? f.warn_below : f.spec) =
        v->get<double>();
  }
  return f;
}


}  // namespace

Result<GpuThresholds> parse_gpu_thresholds(std::string_view text, std::string_view origin) {
  json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) return fail("read GPU thresholds {}: not valid JSON; fix the file or drop the option", origin);
  if (!doc.is_object() || core::string_field(doc, "schema") != "cmax.gpu-thresholds/1")
    return fail("read GPU thresholds {}: schema must be \"cmax.gpu-thresholds/1\"", origin);
  GpuThresholds t;
  t.origin = std::string(origin);
  t.matmul_kernel = core::string_field(doc, "matmul_kernel");
  if (auto it = doc.find("node_relative_min"); it != doc.end()) {
    if (!it->is_number() || it->get<double>() <= 0 || it->get<double>() > 1)
      return fail("read GPU thresholds {}: node_relative_min must be a number in (0, 1]", origin);
    t.node_relative_min = it->get<double>();
  }
  auto models = doc.find("models");
  if (models == doc.end() || !models->is_array())
    return fail("read GPU thresholds {}: 'models' must be an array", origin);
  for (std::size_t i = 0; i < models->size(); ++i) {
    const json& m = (*models)[i];
    std::string where = fmt::format("read GPU thresholds {}: models[{}]", origin, i);
    if (!m.is_object() || core::string_field(m, "match").empty()) return fail("{}: needs a non-empty string 'match'", where);
    GpuModelThresholds e;
    e.match = core::string_field(m, "match");
    e.model = core::string_field(m, "model");
    e.notes = core::string_field(m, "notes");
    where += " (" + e.match + ")";
    struct Field {
      const char* key;
      GpuFloor GpuModelThresholds::*floor;
    };
    for (auto [key, member] : {Field{"matmul_tflops", &GpuModelThresholds::matmul_tflops},
                               Field{"membw_gbps", &GpuModelThresholds::membw_gbps},
                               Field{"pcie_h2d_gbps", &GpuModelThresholds::pcie_h2d_gbps},
                               Field{"pcie_d2h_gbps", &GpuModelThresholds::pcie_d2h_gbps},
                               Field{"nvlink_gbps", &GpuModelThresholds::nvlink_gbps}}) {
      auto f = floor_of(m, key, where);
      if (!f) return Unexpected<Error>{f.error()};
      e.*member = *f;
    }
    t.models.push_back(std::move(e));
  }
  return t;
}

std::string_view builtin_gpu_thresholds_text() { return kBuiltinGpuThresholds; }

Result<GpuThresholds> builtin_gpu_thresholds() {
  return parse_gpu_thresholds(builtin_gpu_thresholds_text(), "built-in data/gpu-thresholds.json");
}

Result<GpuThresholds> load_gpu_thresholds_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail("read GPU thresholds {}: cannot open the file; check the path", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_gpu_thresholds(ss.str(), path);
}

const GpuModelThresholds* match_gpu_model(const GpuThresholds& t, std::string_view device_name) {
  const GpuModelThresholds* best = nullptr;
  for (const auto& m : t.models)
    if (device_name.find(m.match) != std::string_view::npos && (!best || m.match.size() > best->match.size()))
      best = &m;
  return best;
}

}  // namespace cmax::health
