#include "nccl/analysed_run.h"

#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "nccl/chart.h"

namespace cmax::nccl {

using json = nlohmann::json;
namespace fs = std::filesystem;

json anomaly_json(const Anomaly& a) {
  json j{{"size_bytes", a.size_bytes},       {"kind", a.kind},
          {"placement", a.placement},         {"measured_gbps", a.measured_gbps},
          {"expected_gbps", a.expected_gbps}, {"detail", a.detail}};
  if (a.nodes > 0) j["nodes"] = a.nodes;
  return j;
}

json run_json(const AnalysedRun& a) {
  const auto& r = a.run;
  const auto& an = a.analysis;
  json anomalies = json::array();
  for (const auto& x : an.anomalies) anomalies.push_back(anomaly_json(x));
  json j{{"file", a.file},
         {"index", a.index},
         {"test", r.test},
         {"collective", std::string(collective_name(r.collective))},
         {"ranks", r.ranks},
         {"ranks_inferred", r.ranks_inferred},
         {"nodes", r.nodes},
         {"hosts", r.hosts},
         {"gpu", r.gpu_model},
         {"nccl_version", r.nccl_version},
         {"rows", r.rows.size()},
         {"complete", r.complete},
         {"fabric", r.fabric.empty() ? json(nullptr) : json(r.fabric)},
         {"nics", r.nics > 0 ? json(r.nics) : json(nullptr)},
         {"backend", r.backend.empty() ? json(nullptr) : json(r.backend)},
         {"peak_busbw_gbps", an.peak_busbw_gbps},
         {"avg_busbw_gbps", an.avg_busbw_gbps},
         {"avg_busbw_reported", r.avg_busbw_reported ? json(*r.avg_busbw_reported) : json(nullptr)},
         {"fit",
          {{"ok", an.fit.ok}, {"plateau_only", an.fit.plateau_only}, {"peak_gbps", an.fit.peak_gbps},
           {"plateau_gbps", an.plateau_gbps ? json(*an.plateau_gbps) : json(nullptr)},
           {"plateau_not_reached_by", an.plateau_gbps || !an.fit.ok ? json(nullptr) : json(an.plateau_not_reached_by)},
           {"mid_log2", an.fit.mid_log2}, {"slope", an.fit.slope}, {"noise", an.fit.noise}, {"points", an.fit.points}}},
         {"anomalies", anomalies},
         {"notes", an.notes},
         {"warnings", r.warnings},
         {"verdict", an.verdict},
         {"chart", a.chart.empty() ? json(nullptr) : json(a.chart)}};
  if (an.reference) {
    const auto& ref = *an.reference;
    j["reference"] = {{"gpu", ref.gpu},
                      {"fabric", ref.fabric},
                      {"collective", ref.collective},
                      {"variant", ref.variant},
                      {"expected_busbw_gbps", ref.expected_busbw_gbps ? json(*ref.expected_busbw_gbps) : json(nullptr)},
                      {"pass_bar_gbps", ref.pass_bar_gbps ? json(*ref.pass_bar_gbps) : json(nullptr)},
                      {"source", ref.source}};
  } else {
    j["reference"] = nullptr;
  }
  if (!a.label.empty()) {
    j["step"] = a.label;
    j["variant"] = a.variant;
  }
  return j;
}

std::string chart_name(const AnalysedRun& a) {
  if (!a.label.empty()) return a.label + ".svg";
  return fmt::format("{}-{}.svg", fs::path(a.file).stem().string(), a.index + 1);
}

bool analyse_runs(std::vector<AnalysedRun>& runs, const std::vector<Reference>& refs, const std::string& dir,
                  bool charts, std::vector<ScalingFinding>& scaling_out) {
  bool anomaly = false;
  for (auto& a : runs) {
    // A sweep's variants are judged against their own numbers (ring against ring).
    a.analysis = analyze_run(a.run, refs, a.variant == "golden" || a.variant.empty() ? "default" : a.variant);
    if (!a.analysis.anomalies.empty()) anomaly = true;
    if (charts) {
      const auto path = (fs::path(dir) / chart_name(a)).string();
      std::ofstream out(path);
      out << render_svg(a.run, a.analysis);
      if (out) a.chart = path;
    }
  }
  // Scaling: the same collective, GPU and variant over node counts, from one directory (a sweep's
  // run directory; logs of different clusters belong in different directories).
  std::map<std::string, std::vector<const Run*>> groups;
  for (const auto& a : runs)
    if (a.run.nodes > 0)
      groups[fmt::format("{} {}{} in {}", collective_name(a.run.collective),
                         a.run.gpu_model.empty() ? "unknown GPU" : a.run.gpu_model,
                         a.variant.empty() ? "" : " (" + a.variant + ")", fs::path(a.file).parent_path().string())]
          .push_back(&a.run);
  scaling_out.clear();
  for (const auto& [key, group] : groups) {
    if (group.size() < 2) continue;
    for (auto& x : analyze_scaling(group)) {
      scaling_out.push_back({key, std::move(x)});
      anomaly = true;
    }
  }
  return anomaly;
}

json scaling_json(const std::vector<ScalingFinding>& scaling) {
  json out = json::array();
  for (const auto& s : scaling) {
    auto j = anomaly_json(s.anomaly);
    j["group"] = s.group;
    out.push_back(j);
  }
  return out;
}

}  // namespace cmax::nccl
