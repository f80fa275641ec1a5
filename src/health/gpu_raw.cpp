#include "health/gpu_raw.h"

#include <nlohmann/json.hpp>

namespace cmax::health {

namespace {

using nlohmann::json;

// Field readers: absent is the default; present with the wrong type is an error, recorded once.
struct Reader {
  std::string error;

  void bad(const std::string& where, const char* key, const char* want) {
    if (error.empty()) error = where + "." + key + " must be " + want;
  }
  std::string str(const json& j, const char* key, const std::string& where) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return {};
    if (!it->is_string()) return bad(where, key, "a string"), std::string();
    return it->get<std::string>();
  }
  double num(const json& j, const char* key, const std::string& where) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return 0;
    if (!it->is_number()) return bad(where, key, "a number"), 0;
    return it->get<double>();
  }
  std::uint64_t count(const json& j, const char* key, const std::string& where) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return 0;
    if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<std::int64_t>() >= 0))
      return bad(where, key, "a non-negative integer"), 0;
    return it->get<std::uint64_t>();
  }
  int integer(const json& j, const char* key, const std::string& where) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return 0;
    if (!it->is_number_integer()) return bad(where, key, "an integer"), 0;
    return it->get<int>();
  }
  bool boolean(const json& j, const char* key, const std::string& where) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return false;
    if (!it->is_boolean()) return bad(where, key, "true or false"), false;
    return it->get<bool>();
  }
  const json* object(const json& j, const char* key, const std::string& where) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return nullptr;
    if (!it->is_object()) return bad(where, key, "an object"), nullptr;
    return &*it;
  }

  // A step's numbers: "tflops" for the GEMM, "gbps" for copies.
  GpuRawStep step(const json& parent, const char* key, const std::string& where, const char* value_key) {
    GpuRawStep s;
    const json* j = object(parent, key, where);
    if (!j) return s;
    const std::string at = where + "." + key;
    s.ran = true;
    s.error = str(*j, "error", at);
    s.value = num(*j, value_key, at);
    s.best = num(*j, value_key == std::string("tflops") ? "best_tflops" : "best_gbps", at);
    s.reps = integer(*j, "reps", at);
    s.bytes = count(*j, "bytes", at);
    s.kernel = str(*j, "kernel", at);
    if (s.error.empty() && !j->contains(value_key) && error.empty())
      error = at + " has neither \"" + value_key + "\" nor \"error\"";
    return s;
  }

  GpuRawCorrectness correctness(const json& parent, const std::string& where) {
    GpuRawCorrectness c;
    const json* j = object(parent, "correctness", where);
    if (!j) return c;
    const std::string at = where + ".correctness";
    c.ran = true;
    c.error = str(*j, "error", at);
    c.n = integer(*j, "n", at);
    c.kat_mismatches = count(*j, "kat_mismatches", at);
    c.kat_elements = count(*j, "kat_elements", at);
    c.kat_checksum = str(*j, "kat_checksum", at);
    c.checksum = str(*j, "checksum", at);
    c.repeats = integer(*j, "repeats", at);
    c.repeat_mismatches = integer(*j, "repeat_mismatches", at);
    if (c.error.empty() && (c.kat_checksum.empty() || c.checksum.empty()) && error.empty())
      error = at + " has no checksums and no \"error\"";
    return c;
  }
};

}  // namespace

Result<GpuRaw> parse_gpu_raw(std::string_view text) {
  json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) return fail("read cmax-gpucheck output: not valid JSON; rerun cmax-gpucheck by hand to see what it printed");
  if (!doc.is_object()) return fail("read cmax-gpucheck output: expected a JSON object, got {}", doc.type_name());
  auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_string() || schema->get<std::string>() != "cmax.gpucheck.raw/1")
    return fail("read cmax-gpucheck output: schema must be \"cmax.gpucheck.raw/1\"; cmax and cmax-gpucheck are from different builds");

  Reader r;
  GpuRaw raw;
  raw.status = r.str(doc, "status", "$");
  raw.error = r.str(doc, "error", "$");
  raw.program = r.str(doc, "program", "$");
  raw.driver_version = r.str(doc, "driver_version", "$");
  raw.runtime_version = r.str(doc, "runtime_version", "$");
  raw.driver_gpus = r.integer(doc, "driver_gpus", "$");
  if (raw.status.empty()) return fail("read cmax-gpucheck output: no \"status\"");

  if (auto it = doc.find("devices"); it != doc.end()) {
    if (!it->is_array()) return fail("read cmax-gpucheck output: \"devices\" must be an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& dj = (*it)[i];
      const std::string at = "devices[" + std::to_string(i) + "]";
      if (!dj.is_object()) return fail("read cmax-gpucheck output: {} must be an object", at);
      if (!dj.contains("index") || !dj["index"].is_number_integer())
        return fail("read cmax-gpucheck output: {} has no integer \"index\"", at);
      GpuRawDevice d;
      d.index = dj["index"].get<int>();
      d.error = r.str(dj, "error", at);
      d.name = r.str(dj, "name", at);
      d.uuid = r.str(dj, "uuid", at);
      d.pci_bus_id = r.str(dj, "pci_bus_id", at);
      d.compute_capability = r.str(dj, "compute_capability", at);
      d.memory_bytes = r.count(dj, "memory_bytes", at);
      d.sm_count = r.integer(dj, "sm_count", at);
      d.matmul = r.step(dj, "matmul", at, "tflops");
      d.correctness = r.correctness(dj, at);
      d.membw = r.step(dj, "membw", at, "gbps");
      d.pcie_h2d = r.step(dj, "pcie_h2d", at, "gbps");
      d.pcie_d2h = r.step(dj, "pcie_d2h", at, "gbps");
      if (d.error.empty() && d.name.empty() && r.error.empty()) r.error = at + " has neither \"name\" nor \"error\"";
      raw.devices.push_back(std::move(d));
    }
  }
  if (auto it = doc.find("peers"); it != doc.end()) {
    if (!it->is_array()) return fail("read cmax-gpucheck output: \"peers\" must be an array");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& pj = (*it)[i];
      const std::string at = "peers[" + std::to_string(i) + "]";
      if (!pj.is_object() || !pj.contains("src") || !pj.contains("dst") || !pj["src"].is_number_integer() ||
          !pj["dst"].is_number_integer())
        return fail("read cmax-gpucheck output: {} needs integer \"src\" and \"dst\"", at);
      GpuRawPeer p;
      p.src = pj["src"].get<int>();
      p.dst = pj["dst"].get<int>();
      p.can_access = r.boolean(pj, "can_access", at);
      if (pj.contains("performance_rank") && pj["performance_rank"].is_number_integer())
        p.performance_rank = pj["performance_rank"].get<int>();
      p.copy.error = r.str(pj, "error", at);
      if (p.can_access || !p.copy.error.empty()) {
        p.copy.ran = true;
        p.copy.value = r.num(pj, "gbps", at);
        p.copy.best = r.num(pj, "best_gbps", at);
        p.copy.reps = r.integer(pj, "reps", at);
        p.copy.bytes = r.count(pj, "bytes", at);
        if (p.copy.error.empty() && !pj.contains("gbps") && r.error.empty())
          r.error = at + " can access but has neither \"gbps\" nor \"error\"";
      }
      raw.peers.push_back(std::move(p));
    }
  }
  if (!r.error.empty()) return fail("read cmax-gpucheck output: {}", r.error);
  return raw;
}

}  // namespace cmax::health
