#include "health/gpu_tools_judge.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/strings.h"

namespace cmax::health {

namespace {

using audit::Outcome;
using gputools::LinkKind;

CheckResult base(std::string_view id, std::string target, std::string_view title) {
  CheckResult r;
  r.id = std::string(id);
  r.category = audit::Category::reliability;
  r.title = std::string(title);
  r.target = std::move(target);
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string join(const std::vector<std::string>& v, std::string_view sep, std::size_t max_items = 8) {
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < max_items; ++i) out += (i ? std::string(sep) : "") + v[i];
  if (v.size() > max_items) out += fmt::format("{}and {} more", sep, v.size() - max_items);
  return out;
}

// Each GPU's nearest NIC (PIX best, SYS worst), for the summary: which GPUs can do GPUDirect RDMA
// through a PCIe switch they share with a NIC (PIX/PXB) and which cross the host bridge or a socket.
std::string nic_locality(const gputools::TopoMatrix& t) {
  const auto nics = t.nics();
  if (nics.empty()) return "no NICs in the matrix";
  std::vector<std::string> parts;
  int near = 0;
  const auto gpus = t.gpus();
  for (const auto& g : gpus) {
    std::optional<std::pair<gputools::TopoLink, std::string>> best;
    for (const auto& n : nics) {
      auto l = t.link(g, n);
      if (l && l->kind != LinkKind::unknown && (!best || l->kind < best->first.kind)) best = {{*l, n}};
    }
    if (!best) continue;
    near += best->first.kind == LinkKind::pix || best->first.kind == LinkKind::pxb;
    parts.push_back(fmt::format("{}->{}({}) {}", g, best->second, t.nic_device(best->second),
                                gputools::link_kind_name(best->first.kind)));
  }
  return fmt::format("{} of {} GPUs have a NIC behind a shared PCIe switch (PIX/PXB): {}", near, gpus.size(),
                     join(parts, ", ", 16));
}

}  // namespace

CheckResult judge_topology(const gputools::TopoMatrix& topo, const GpuThresholds& thresholds,
                           const TopoJudgeOptions& options) {
  CheckResult r = base("gpu.topology", "node", "GPU interconnect topology (nvidia-smi topo -m)");
  const auto gpus = topo.gpus();
  const GpuModelThresholds* model = options.gpu_model.empty() ? nullptr : match_gpu_model(thresholds, options.gpu_model);
  std::optional<bool> expect = options.expect_nvlink;
  if (!expect && model) expect = model->nvlink_gbps.set();
  if (gpus.size() < 2) {
    r.outcome = Outcome::not_applicable;
    r.reason = fmt::format("{} GPU in the matrix: no GPU pairs to check", gpus.size());
    r.summary = r.reason + "; " + nic_locality(topo);
    return r;
  }
  struct Pair {
    std::string name;
    std::optional<gputools::TopoLink> link;
  };
  std::vector<Pair> pairs;
  std::map<int, int> nv_counts;  // NV<n> -> pairs
  for (std::size_t i = 0; i < gpus.size(); ++i)
    for (std::size_t j = i + 1; j < gpus.size(); ++j) {
      // Read both halves: a cut row leaves one empty, and an asymmetric matrix counts its worse half.
      auto a = topo.link(gpus[i], gpus[j]), b = topo.link(gpus[j], gpus[i]);
      auto l = !a ? b : !b ? a : (a->kind != b->kind ? (a->kind > b->kind ? a : b) : (a->nvlinks <= b->nvlinks ? a : b));
      pairs.push_back({gpus[i] + "<->" + gpus[j], l});
      if (l && l->kind == LinkKind::nvlink) ++nv_counts[l->nvlinks];
    }
  int common = 0, common_pairs = 0;  // the NV count most pairs show (ties: the larger)
  for (const auto& [n, c] : nv_counts)
    if (c >= common_pairs) common = n, common_pairs = c;
  const int want = options.expected_nvlinks.value_or(common);
  std::vector<std::string> not_nv, fewer, missing;
  int nv_pairs = 0;
  for (const auto& p : pairs) {
    if (!p.link) missing.push_back(p.name);
    else if (p.link->kind != LinkKind::nvlink) not_nv.push_back(fmt::format("{} {}", p.name, gputools::link_kind_name(p.link->kind)));
    else ++nv_pairs;
    if (p.link && p.link->kind == LinkKind::nvlink && p.link->nvlinks < want)
      fewer.push_back(fmt::format("{} NV{}", p.name, p.link->nvlinks));
  }
  r.measurements.push_back({"nvlink_pairs", static_cast<double>(nv_pairs), "pairs", static_cast<double>(pairs.size()), std::nullopt});
  if (!nv_counts.empty())
    r.measurements.push_back({"min_nvlinks", static_cast<double>(nv_counts.begin()->first), "links",
                              want ? std::optional<double>(want) : std::nullopt, std::nullopt});
  r.summary = fmt::format("{} GPUs, {}/{} pairs on NVLink{}; {}", gpus.size(), nv_pairs, pairs.size(),
                          common ? fmt::format(" (NV{} on {})", common, common_pairs) : "", nic_locality(topo));
  const std::string model_name = model ? model->model : options.gpu_model.empty() ? "this GPU" : options.gpu_model;
  if (expect == false) {
    r.outcome = Outcome::pass;
    r.reason = fmt::format("no NVLink expected on {}: the GPU pairs' PCIe paths are not judged", model_name);
    return r;
  }
  const bool uniform = not_nv.empty() && fewer.empty() && missing.empty();
  if (!expect) {
    r.outcome = uniform ? Outcome::pass : Outcome::unverified;
    r.reason = uniform ? fmt::format("no thresholds for {}; every GPU pair is NV{} alike", model_name, common)
                       : fmt::format("no thresholds for {}: cannot tell whether NVLink is expected; set the model's "
                                     "nvlink floor in gpu-thresholds.json or pass the expected NVLink option",
                                     model_name);
    return r;
  }
  if (!not_nv.empty() || !fewer.empty()) {
    std::vector<std::string> problems;
    if (!not_nv.empty())
      problems.push_back(join(not_nv, ", ") +
                         ": NVLinks down or fabric manager not running; check `nvidia-smi nvlink -s` and "
                         "`systemctl status nvidia-fabricmanager`");
    if (!fewer.empty())
      problems.push_back(fmt::format("{} where NV{} is expected: some of the pair's NVLinks are down; check "
                                     "`nvidia-smi nvlink -s` and `nvidia-smi nvlink -e` for the GPUs named",
                                     join(fewer, ", "), want));
    r.outcome = Outcome::fail;
    r.reason = fmt::format("{} expects every GPU pair on NVLink: {}", model_name, join(problems, "; "));
    return r;
  }
  if (!missing.empty()) {
    r.outcome = Outcome::unverified;
    r.reason = fmt::format("the matrix lacks {} (cut short?); rerun `nvidia-smi topo -m` and pass its whole output",
                           join(missing, ", "));
    return r;
  }
  r.outcome = Outcome::pass;
  return r;
}

namespace {

constexpr std::string_view kFabricManager = "system not yet initialized";

// Every warning of a test: its own, then each entity's, prefixed with the entity; duplicates (4.x
// repeats entity errors in test_summary) once.
std::vector<std::string> diag_texts(const gputools::DcgmTest& t) {
  std::vector<std::string> out = t.warnings;
  for (const auto& e : t.results)
    for (const auto& w : e.warnings)
      if (std::find(t.warnings.begin(), t.warnings.end(), w) == t.warnings.end()) out.push_back(e.entity + ": " + w);
  return out;
}

std::string diag_who(const gputools::DcgmTest& t, gputools::DiagStatus s) {
  std::vector<std::string> who;
  for (const auto& e : t.results)
    if (e.status == s) who.push_back(e.entity);
  if (!who.empty()) return join(who, ", ", 16);
  return t.all_gpus ? "all GPUs" : "the node";
}

std::string diag_remedy(const std::vector<std::string>& texts, std::string_view otherwise) {
  for (const auto& t : texts)
    if (t.find(kFabricManager) != std::string::npos)
      return "CUDA could not initialise ('system not yet initialized'): nvidia-fabricmanager is probably not running "
             "(nccl-tests #264); check `systemctl status nvidia-fabricmanager`, start it, and rerun dcgmi diag";
  return std::string(otherwise);
}

}  // namespace

std::vector<CheckResult> judge_dcgm_diag(const gputools::DcgmDiag& diag) {
  constexpr std::string_view kTitle = "DCGM diagnostic (dcgmi diag)";
  std::vector<CheckResult> out;
  if (!diag.runtime_error.empty() || diag.tests.empty()) {
    CheckResult r = base("gpu.dcgm_diag", "node", kTitle);
    r.outcome = Outcome::unverified;
    const std::string what = diag.runtime_error.empty() ? "no test result in the dcgmi diag output"
                                                        : "dcgmi could not run the diagnostic: " + diag.runtime_error;
    r.reason = fmt::format("{}; {}", core::clip(what, 400),
                           diag_remedy({diag.runtime_error},
                                       "check that nv-hostengine is running (`dcgmi discovery -l`) and rerun `dcgmi diag -r 2`"));
    r.summary = core::clip(what, 160);
    out.push_back(std::move(r));
    return out;
  }
  for (const auto& t : diag.tests) {
    CheckResult r = base("gpu.dcgm_diag", t.name, kTitle);
    const auto texts = diag_texts(t);
    const std::string said = texts.empty() ? "dcgmi gave no reason" : core::clip(join(texts, " | ", 4), 600);
    r.summary = fmt::format("{} / {}: {}", t.category, t.name, gputools::diag_status_name(t.overall));
    if (!t.results.empty()) {
      std::vector<std::string> each;
      for (const auto& e : t.results) each.push_back(fmt::format("{} {}", e.entity, gputools::diag_status_name(e.status)));
      r.summary += " (" + join(each, ", ", 16) + ")";
    } else if (t.all_gpus) {
      r.summary += " (all GPUs)";
    }
    if (!t.info.empty()) r.summary += "; info: " + core::clip(t.info.front(), 160);
    switch (t.overall) {
      case gputools::DiagStatus::pass:
        r.outcome = Outcome::pass;
        break;
      case gputools::DiagStatus::fail:
        r.outcome = Outcome::fail;
        r.reason = fmt::format("dcgmi diag test '{}' failed on {}: {}; {}", t.name, diag_who(t, t.overall), said,
                               diag_remedy(texts, "drain the GPUs named, act on DCGM's text above, and rerun "
                                                  "`dcgmi diag -r 3` after a GPU reset"));
        break;
      case gputools::DiagStatus::warn:
        r.outcome = Outcome::warn;
        r.reason = fmt::format("dcgmi diag test '{}' warned on {}: {}; {}", t.name, diag_who(t, t.overall), said,
                               diag_remedy(texts, "act on DCGM's warning and rerun `dcgmi diag -r 3`"));
        break;
      default:
        // A skipped test verified nothing: never a pass.
        r.outcome = Outcome::unverified;
        r.reason = fmt::format("dcgmi diag test '{}' {}: {}; {}", t.name,
                               t.overall == gputools::DiagStatus::skip ? "was skipped" : "did not run", said,
                               diag_remedy(texts, "fix any failed test of this run and rerun `dcgmi diag`"));
    }
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

// "memcpy CE CPU(row) -> GPU(column) ..." -> {"CPU", "->", "GPU"}: how to name a cell's link.
struct LinkNames {
  std::string row = "row", arrow = "->", column = "column";
};

LinkNames link_names(std::string_view description) {
  LinkNames n;
  auto words = core::split_any(description, " ");
  for (std::size_t i = 0; i + 2 < words.size(); ++i)
    if (words[i].ends_with("(row)") && words[i + 2].ends_with("(column)")) {
      n.row = std::string(words[i].substr(0, words[i].size() - 5));
      n.arrow = std::string(words[i + 1]);
      n.column = std::string(words[i + 2].substr(0, words[i + 2].size() - 8));
    }
  return n;
}

// The model floor that applies to a testcase: only the unidirectional copy-engine tests measure
// what gpu-thresholds.json's floors were set for (cudaMemcpyAsync host<->device with pinned memory,
// cudaMemcpyPeerAsync one direction).
const GpuFloor* floor_for(const GpuModelThresholds& m, std::string_view testcase) {
  if (testcase == "host_to_device_memcpy_ce") return &m.pcie_h2d_gbps;
  if (testcase == "device_to_host_memcpy_ce") return &m.pcie_d2h_gbps;
  if (testcase == "device_to_device_memcpy_read_ce" || testcase == "device_to_device_memcpy_write_ce")
    return &m.nvlink_gbps;
  return nullptr;
}

std::string_view error_remedy(std::string_view error) {
  if (error.find("UnsupportedPtxVersion") != std::string_view::npos)
    return "this nvbandwidth was built with a newer CUDA toolkit than the driver supports: build it with the "
           "driver's CUDA version (or update the driver) and rerun";
  if (error.find("checking the pattern") != std::string_view::npos)
    return "data copied between GPUs came back wrong: drain the node, check `dmesg` for Xid errors and "
           "`nvidia-smi -q -d ECC`, and run `dcgmi diag -r 3`";
  return "check `dmesg` for Xid errors and `nvidia-smi -q`, and rerun the testcase alone (`nvbandwidth -t <name>`)";
}

void judge_matrix(CheckResult& r, const gputools::NvbTestcase& tc, const GpuModelThresholds* model,
                  std::string_view gpu_name) {
  const auto names = link_names(tc.description);
  struct Cell {
    std::string link;
    double value;
  };
  std::vector<Cell> cells;
  for (std::size_t i = 0; i < tc.matrix.size(); ++i)
    for (std::size_t j = 0; j < tc.matrix[i].size(); ++j)
      if (tc.matrix[i][j])
        cells.push_back({fmt::format("{}{}{}{}{}", names.row, i < tc.row_labels.size() ? tc.row_labels[i] : "?",
                                     names.arrow, names.column,
                                     j < tc.column_labels.size() ? tc.column_labels[j] : "?"),
                         *tc.matrix[i][j]});
  if (cells.empty()) {
    r.outcome = Outcome::unverified;
    r.reason = "the testcase passed but printed no values; rerun it alone (`nvbandwidth -t " + tc.name + "`)";
    return;
  }
  std::vector<double> values;
  for (const auto& c : cells) values.push_back(c.value);
  const double med = median(values);
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  const bool latency = tc.kind == gputools::NvbMatrixKind::latency;
  const std::string unit = latency ? "ns" : "GB/s";
  r.summary = fmt::format("{} links, median {:.2f} {}, min {:.2f}, max {:.2f}", cells.size(), med, unit, *lo, *hi);
  if (tc.sum_gbps) r.summary += fmt::format(", SUM {:.2f}", *tc.sum_gbps);
  if (latency) {
    // No published latency floor, and lower is better: reported, judged only for errors.
    r.measurements.push_back({"median_latency_ns", med, "ns", std::nullopt, std::nullopt});
    r.outcome = Outcome::pass;
    r.reason = "latency is reported, not judged (no published floor)";
    return;
  }
  const bool host = tc.kind == gputools::NvbMatrixKind::host_device;
  const std::string_view remedy =
      host ? "a PCIe link trained down or a NUMA-remote buffer: check `nvidia-smi -q -d PCIE` (link gen and width) "
             "and `nvidia-smi topo -m`"
           : "NVLinks down on this pair or peer traffic over PCIe: check `nvidia-smi nvlink -s` and "
             "`nvidia-smi topo -m`";
  std::vector<std::string> slow, below_floor, below_warn;
  if (cells.size() >= 2)
    for (const auto& c : cells)
      if (c.value < kLinkMedianMin * med)
        slow.push_back(fmt::format("{} {:.2f} GB/s is {:.0f}% of the median {:.2f}", c.link, c.value, 100 * c.value / med, med));
  const GpuFloor* floor = model ? floor_for(*model, tc.name) : nullptr;
  if (floor && floor->set())
    for (const auto& c : cells) {
      if (floor->fail_below && c.value < *floor->fail_below)
        below_floor.push_back(fmt::format("{} {:.2f} GB/s is below the {} floor {:g}", c.link, c.value, model->model, *floor->fail_below));
      else if (floor->warn_below && c.value < *floor->warn_below)
        below_warn.push_back(fmt::format("{} {:.2f} GB/s is below the expected {:g} for {}", c.link, c.value, *floor->warn_below, model->model));
    }
  r.measurements.push_back({"median_gbps", med, "GB/s", floor ? floor->fail_below : std::nullopt, std::nullopt});
  r.measurements.push_back({"min_gbps", *lo, "GB/s", cells.size() >= 2 ? std::optional(kLinkMedianMin * med) : std::nullopt, std::nullopt});
  if (!slow.empty() || !below_floor.empty()) {
    r.outcome = Outcome::fail;
    slow.insert(slow.end(), below_floor.begin(), below_floor.end());
    r.reason = fmt::format("{}; {}", join(slow, "; ", 6), remedy);
  } else if (!below_warn.empty()) {
    r.outcome = Outcome::warn;
    r.reason = fmt::format("{}; {}", join(below_warn, "; ", 6), remedy);
  } else if (cells.size() < 2 && !(floor && floor->set())) {
    r.outcome = Outcome::unverified;
    r.reason = fmt::format("one link and no floor for this testcase on {}: the value is reported unjudged",
                           model ? model->model : gpu_name.empty() ? std::string_view("an unnamed GPU") : gpu_name);
  } else {
    r.outcome = Outcome::pass;
  }
}

}  // namespace

std::vector<CheckResult> judge_nvbandwidth(const gputools::Nvbandwidth& run, const GpuThresholds* thresholds,
                                           std::string_view gpu_model) {
  constexpr std::string_view kTitle = "Copy bandwidth per link (nvbandwidth)";
  const std::string gpu_name = !gpu_model.empty() ? std::string(gpu_model) : run.devices.empty() ? "" : run.devices.front().name;
  const GpuModelThresholds* model = thresholds && !gpu_name.empty() ? match_gpu_model(*thresholds, gpu_name) : nullptr;
  std::vector<CheckResult> out;
  if (run.testcases.empty()) {
    CheckResult r = base("gpu.nvbandwidth", "node", kTitle);
    r.outcome = Outcome::unverified;
    r.reason = run.errors.empty() ? "nvbandwidth ran no testcase; rerun it and pass its whole output"
                                  : "nvbandwidth ran no testcase: " + core::clip(join(run.errors, " | ", 4), 400) + "; " +
                                        std::string(error_remedy(run.errors.front()));
    r.summary = "no testcase";
    out.push_back(std::move(r));
    return out;
  }
  for (const auto& tc : run.testcases) {
    CheckResult r = base("gpu.nvbandwidth", tc.name.empty() ? "unnamed testcase" : tc.name, kTitle);
    switch (tc.status) {
      case gputools::NvbStatus::waived:
        r.outcome = Outcome::not_applicable;
        r.reason = "waived by nvbandwidth: the testcase needs what this node lacks (a second GPU, peer access)";
        r.summary = "Waived";
        break;
      case gputools::NvbStatus::not_found:
        r.outcome = Outcome::unverified;
        r.reason = "this nvbandwidth does not know the testcase; list them with `nvbandwidth -l`";
        r.summary = "Not Found";
        break;
      case gputools::NvbStatus::error:
        r.outcome = Outcome::fail;
        r.reason = fmt::format("nvbandwidth {} failed: {}; {}", tc.name, core::clip(tc.error.empty() ? "no text" : tc.error, 500),
                               error_remedy(tc.error));
        r.summary = "Error: " + core::clip(tc.error, 120);
        break;
      case gputools::NvbStatus::passed:
        judge_matrix(r, tc, model, gpu_name);
        break;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace cmax::health
