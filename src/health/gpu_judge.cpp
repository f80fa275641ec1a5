#include "health/gpu_judge.h"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

namespace cmax::health {

namespace {

using audit::Outcome;

constexpr std::string_view kRemedyCuda =
    "check `dmesg` for Xid errors and `nvidia-smi -q -d ECC,ROW_REMAPPER,PERFORMANCE`; drain the GPU if it repeats";

std::string_view title_of(std::string_view id) {
  if (id == "gpu.matmul") return "GPU matmul throughput (FP16 tensor cores, FP32 accumulate)";
  if (id == "gpu.correctness") return "GPU GEMM bit-exact correctness (known answer, repeat, across GPUs)";
  if (id == "gpu.membw") return "GPU device memory bandwidth (copy kernel)";
  if (id == "gpu.pcie_h2d") return "PCIe host-to-device bandwidth (pinned memory)";
  if (id == "gpu.pcie_d2h") return "PCIe device-to-host bandwidth (pinned memory)";
  return "NVLink / peer copy bandwidth (one direction)";
}

CheckResult base(std::string_view id, std::string target) {
  CheckResult r;
  r.id = std::string(id);
  r.category = audit::Category::reliability;
  r.title = std::string(title_of(id));
  r.target = std::move(target);
  return r;
}

std::string gpu(int index) { return fmt::format("gpu{}", index); }

// A step's CUDA error: the GPU being busy (memory held by another process) is no finding about
// the GPU; anything else during a plain GEMM or copy is.
void step_error(CheckResult& r, std::string_view what, const std::string& error) {
  if (error.find("cudaErrorMemoryAllocation") != std::string::npos || error.find("out of memory") != std::string::npos) {
    r.outcome = Outcome::unverified;
    r.reason = fmt::format("{} could not run: {}; free the GPU's memory (another process holds it) and rerun", what, error);
  } else {
    r.outcome = Outcome::fail;
    r.reason = fmt::format("{} failed: {}; {}", what, error, kRemedyCuda);
  }
  r.summary = fmt::format("{}: error", what);
}

// Judges `value` against `floor`; `what` names the measurement for the reason text.
void judge_floor(CheckResult& r, Measurement m, const GpuFloor& floor, std::string_view what,
                 std::string_view remedy) {
  m.min = floor.fail_below;
  const double v = m.value;
  r.measurements.push_back(m);
  if (floor.fail_below && v < *floor.fail_below) {
    r.outcome = Outcome::fail;
    r.reason = fmt::format("{} {:.1f} {} is below the floor {:g}; {}", what, v, m.unit, *floor.fail_below, remedy);
  } else if (floor.warn_below && v < *floor.warn_below) {
    r.outcome = Outcome::warn;
    r.reason = fmt::format("{} {:.1f} {} is below the expected {:g}; {}", what, v, m.unit, *floor.warn_below, remedy);
  } else {
    r.outcome = Outcome::pass;
  }
}

void unjudged(CheckResult& r, Measurement m, std::string reason) {
  r.measurements.push_back(std::move(m));
  r.outcome = Outcome::unverified;
  r.reason = std::move(reason);
}

const GpuRawDevice* device_by_index(const GpuRaw& raw, int index) {
  for (const auto& d : raw.devices)
    if (d.index == index) return &d;
  return nullptr;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The value most devices share (ties: the smallest); how many share it.
std::pair<std::string, int> majority(const std::vector<std::string>& values) {
  std::map<std::string, int> counts;
  for (const auto& v : values) ++counts[v];
  std::pair<std::string, int> best{"", 0};
  for (const auto& [v, n] : counts)
    if (n > best.second) best = {v, n};
  return best;
}

struct Context {
  const GpuRaw& raw;
  const GpuThresholds& t;
  std::map<std::string, std::vector<double>> tflops_by_name;          // successful matmuls per model name
  std::map<std::string, std::vector<std::string>> checksum_by_model;  // name + cc -> float checksums
  std::vector<std::string> kat_checksums;                             // every device: exact, model-free
};

CheckResult judge_matmul(const Context& c, const GpuRawDevice& d, const GpuModelThresholds* model) {
  CheckResult r = base("gpu.matmul", gpu(d.index));
  if (!d.matmul.error.empty()) {
    step_error(r, "the matmul", d.matmul.error);
    return r;
  }
  Measurement m{"tflops", d.matmul.value, "TFLOP/s", std::nullopt, std::nullopt};
  r.summary = fmt::format("{} {}: {:.1f} TFLOP/s ({})", r.target, d.name, d.matmul.value, d.matmul.kernel);
  if (!model) return unjudged(r, m, fmt::format("no thresholds for {}", d.name)), r;
  const bool same_kernel = d.matmul.kernel == c.t.matmul_kernel;
  if (model->matmul_tflops.set() && same_kernel) {
    judge_floor(r, m, model->matmul_tflops, "matmul", "a throttled or degraded GPU: check `nvidia-smi -q -d PERFORMANCE,CLOCK` for throttle reasons");
    return r;
  }
  const auto& peers = c.tflops_by_name.at(d.name);
  if (peers.size() >= 2) {
    const double med = median(peers);
    m.min = med * c.t.node_relative_min;
    r.measurements.push_back(m);
    if (d.matmul.value < *m.min) {
      r.outcome = Outcome::fail;
      r.reason = fmt::format(
          "{:.1f} TFLOP/s is {:.0f}% of the median {:.1f} of this node's {} {} GPUs (floor {:.0f}%): a throttled or "
          "degraded GPU; check `nvidia-smi -q -d PERFORMANCE,CLOCK` for throttle reasons",
          d.matmul.value, 100 * d.matmul.value / med, med, peers.size(), d.name, 100 * c.t.node_relative_min);
    } else {
      r.outcome = Outcome::pass;
      r.reason = fmt::format("within {:.0f}% of the median of this node's {} {} GPUs; no absolute floor for {}",
                             100 * c.t.node_relative_min, peers.size(), d.name, d.matmul.kernel);
    }
    return r;
  }
  unjudged(r, m,
           same_kernel ? fmt::format("no TFLOP/s floor for {} and no other {} on this node to compare with; the value "
                                     "is reported unjudged (set matmul_tflops in the thresholds once calibrated)",
                                     model->model, d.name)
                       : fmt::format("the thresholds are for kernel {}, this run used {}; the value is reported unjudged",
                                     c.t.matmul_kernel, d.matmul.kernel));
  return r;
}

// "checksum 0x1 differs from 0x2 of 3 of the 4 H200 GPUs on this node"
std::string mine_vs(const std::string& mine, const std::string& common, int sharing, std::size_t size,
                    const std::string& what) {
  if (mine != common)
    return fmt::format("checksum {} differs from {} of {} of the {} {}", mine, common, sharing, size, what);
  return fmt::format("checksum {} is shared by only {} of the {} {} (no majority)", mine, sharing, size, what);
}

CheckResult judge_correctness(const Context& c, const GpuRawDevice& d) {
  CheckResult r = base("gpu.correctness", gpu(d.index));
  const auto& k = d.correctness;
  if (!k.error.empty()) {
    step_error(r, "the bit-exact GEMM", k.error);
    return r;
  }
  r.measurements.push_back({"kat_mismatches", static_cast<double>(k.kat_mismatches), "elements", std::nullopt, 0.0});
  r.measurements.push_back({"repeat_mismatches", static_cast<double>(k.repeat_mismatches), "runs", std::nullopt, 0.0});
  const auto& group = c.checksum_by_model.at(d.name + "/" + d.compute_capability);
  const auto [common, sharing] = majority(group);
  const auto [kat_common, kat_sharing] = majority(c.kat_checksums);
  r.summary = fmt::format("{} {}: known answer {}/{} differ, {} runs {}, checksum {}", r.target, d.name,
                          k.kat_mismatches, k.kat_elements, k.repeats,
                          k.repeat_mismatches ? "differ" : "identical", k.checksum);
  const std::string_view remedy =
      "silent data corruption: drain the GPU and run `dcgmi diag -r 3` and `nvidia-smi -q -d ECC,ROW_REMAPPER`";
  std::vector<std::string> problems;
  if (k.kat_mismatches)
    problems.push_back(fmt::format("{} of {} outputs of an exact integer GEMM differ from the int32 reference",
                                   k.kat_mismatches, k.kat_elements));
  if (k.repeat_mismatches)
    problems.push_back(fmt::format("{} of {} runs of the same GEMM gave different bits", k.repeat_mismatches, k.repeats));
  // Without a strict majority there is no telling which GPU is wrong: every one that disagrees fails.
  auto disagrees = [](std::size_t size, const std::string& mine, const std::string& common, int sharing) {
    return size >= 2 && (mine != common || static_cast<std::size_t>(sharing) * 2 <= size);
  };
  if (disagrees(group.size(), k.checksum, common, sharing))
    problems.push_back(mine_vs(k.checksum, common, sharing, group.size(), fmt::format("{} GPUs on this node", d.name)));
  if (disagrees(c.kat_checksums.size(), k.kat_checksum, kat_common, kat_sharing))
    problems.push_back("known-answer " + mine_vs(k.kat_checksum, kat_common, kat_sharing, c.kat_checksums.size(),
                                                 "GPUs on this node"));
  if (!problems.empty()) {
    r.outcome = Outcome::fail;
    for (const auto& p : problems) r.reason += p + "; ";
    r.reason += remedy;
    return r;
  }
  r.outcome = Outcome::pass;
  if (group.size() >= 2) r.summary += fmt::format(", agrees with {} other {}", group.size() - 1, d.name);
  return r;
}

CheckResult judge_transfer(const GpuRawDevice& d, const GpuModelThresholds* model, std::string_view id,
                           const GpuRawStep& s, GpuFloor GpuModelThresholds::*floor, std::string_view what,
                           std::string_view name, std::string_view remedy) {
  CheckResult r = base(id, gpu(d.index));
  if (!s.error.empty()) {
    step_error(r, what, s.error);
    return r;
  }
  Measurement m{std::string(name), s.value, "GB/s", std::nullopt, std::nullopt};
  r.summary = fmt::format("{} {}: {} {:.1f} GB/s (best {:.1f})", r.target, d.name, what, s.value, s.best);
  if (!model) return unjudged(r, m, fmt::format("no thresholds for {}", d.name)), r;
  const GpuFloor& f = model->*floor;
  if (!f.set())
    return unjudged(r, m, fmt::format("no {} floor for {}; the value is reported unjudged", what, model->model)), r;
  judge_floor(r, m, f, what, remedy);
  return r;
}

void judge_peers(const Context& c, std::vector<CheckResult>& out) {
  const auto& raw = c.raw;
  int named = 0;
  for (const auto& d : raw.devices) named += d.error.empty();
  if (raw.peers.empty()) {
    if (named < 2) {
      CheckResult r = base("gpu.nvlink", "");
      r.outcome = Outcome::not_applicable;
      r.reason = "fewer than two GPUs: no peer links to measure";
      out.push_back(std::move(r));
    }
    return;
  }
  for (const auto& p : raw.peers) {
    CheckResult r = base("gpu.nvlink", fmt::format("gpu{}->gpu{}", p.src, p.dst));
    const GpuRawDevice* d = device_by_index(raw, p.src);
    const std::string name = d ? d->name : std::string("unknown GPU");
    const GpuModelThresholds* model = match_gpu_model(c.t, name);
    const bool nvlink_expected = model && model->nvlink_gbps.set();
    if (!p.copy.error.empty()) {
      step_error(r, "the peer copy", p.copy.error);
    } else if (!p.can_access) {
      if (nvlink_expected) {
        r.outcome = Outcome::fail;
        r.reason = fmt::format(
            "gpu{} cannot access gpu{} as a peer on an NVLink system ({}): NVLink down or nvidia-fabricmanager not "
            "running; check `nvidia-smi nvlink -s` and `systemctl status nvidia-fabricmanager`",
            p.src, p.dst, model->model);
      } else {
        r.outcome = Outcome::not_applicable;
        r.reason = fmt::format("no peer access between gpu{} and gpu{} (no NVLink or P2P path)", p.src, p.dst);
      }
      r.summary = fmt::format("{}: no peer access", r.target);
    } else {
      Measurement m{"peer_gbps", p.copy.value, "GB/s", std::nullopt, std::nullopt};
      r.summary = fmt::format("{} {}: peer copy {:.1f} GB/s (best {:.1f})", r.target, name, p.copy.value, p.copy.best);
      if (!model)
        unjudged(r, m, fmt::format("no thresholds for {}", name));
      else if (!nvlink_expected)
        unjudged(r, m, fmt::format("no NVLink floor for {} (its peer path may be PCIe or a bridge); the value is "
                                   "reported unjudged", model->model));
      else
        judge_floor(r, m, model->nvlink_gbps, "peer copy",
                    "check `nvidia-smi nvlink -s` for links down or degraded and `nvidia-smi nvlink -e` for errors");
    }
    out.push_back(std::move(r));
  }
}

}  // namespace

std::vector<CheckResult> gpu_results_all(Outcome outcome, std::string_view reason, bool timed_out) {
  std::vector<CheckResult> out;
  for (auto id : kGpuCheckIds) {
    CheckResult r = base(id, "");
    r.outcome = outcome;
    r.reason = std::string(reason);
    r.summary = std::string(reason);
    r.timed_out = timed_out;
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<CheckResult> judge_gpu(const GpuRaw& raw, const GpuThresholds& t) {
  if (raw.status == "no_device")
    return gpu_results_all(Outcome::not_applicable,
                           raw.error.empty() ? std::string("no CUDA device") : "no CUDA device (" + raw.error + ")");
  if (raw.status != "ok")
    return gpu_results_all(
        Outcome::fail,
        fmt::format("CUDA cannot use the {} GPUs the NVIDIA driver lists: {}; check `nvidia-smi`, that the driver "
                    "and CUDA versions match, and nvidia-fabricmanager on NVSwitch systems",
                    raw.driver_gpus, raw.error.empty() ? raw.status : raw.error));

  Context c{raw, t, {}, {}, {}};
  for (const auto& d : raw.devices) {
    if (!d.error.empty()) continue;
    c.tflops_by_name[d.name];
    c.checksum_by_model[d.name + "/" + d.compute_capability];
    if (d.matmul.ran && d.matmul.error.empty()) c.tflops_by_name[d.name].push_back(d.matmul.value);
    if (d.correctness.ran && d.correctness.error.empty()) {
      c.checksum_by_model[d.name + "/" + d.compute_capability].push_back(d.correctness.checksum);
      c.kat_checksums.push_back(d.correctness.kat_checksum);
    }
  }

  std::vector<CheckResult> out;
  const std::string_view pcie_remedy =
      "check the link with `nvidia-smi -q -d PCIE` (generation and width below the maximum), NUMA placement of the "
      "process, and IOMMU / ACS settings";
  for (const auto& d : raw.devices) {
    if (!d.error.empty()) {
      const bool missing = d.error.rfind("no such device", 0) == 0;
      for (auto id : kGpuCheckIds) {
        if (id == "gpu.nvlink") continue;
        CheckResult r = base(id, gpu(d.index));
        r.outcome = missing ? Outcome::unverified : Outcome::fail;
        r.reason = missing ? fmt::format("{}: {}; check --devices", r.target, d.error)
                           : fmt::format("cannot query {}: {}; {}", r.target, d.error, kRemedyCuda);
        r.summary = r.target + ": " + d.error;
        out.push_back(std::move(r));
      }
      continue;
    }
    const GpuModelThresholds* model = match_gpu_model(t, d.name);
    if (d.matmul.ran) out.push_back(judge_matmul(c, d, model));
    if (d.correctness.ran) out.push_back(judge_correctness(c, d));
    if (d.membw.ran)
      out.push_back(judge_transfer(d, model, "gpu.membw", d.membw, &GpuModelThresholds::membw_gbps, "device copy",
                                   "copy_gbps", "check HBM health with `nvidia-smi -q -d ECC,ROW_REMAPPER` and clocks with `nvidia-smi -q -d CLOCK`"));
    if (d.pcie_h2d.ran)
      out.push_back(judge_transfer(d, model, "gpu.pcie_h2d", d.pcie_h2d, &GpuModelThresholds::pcie_h2d_gbps,
                                   "host-to-device copy", "h2d_gbps", pcie_remedy));
    if (d.pcie_d2h.ran)
      out.push_back(judge_transfer(d, model, "gpu.pcie_d2h", d.pcie_d2h, &GpuModelThresholds::pcie_d2h_gbps,
                                   "device-to-host copy", "d2h_gbps", pcie_remedy));
  }
  judge_peers(c, out);
  return out;
}

std::vector<CheckResult> judge_gpucheck_run(const core::ProcessResult& run, const GpuThresholds& t) {
  const double wall_s = std::chrono::duration<double>(run.wall).count();
  auto stamp = [&](std::vector<CheckResult> v) {
    for (auto& r : v) r.duration_s = wall_s;
    return v;
  };
  const std::string tail = run.err.size() > 400 ? "..." + run.err.substr(run.err.size() - 400) : run.err;
  if (run.timed_out)
    return stamp(gpu_results_all(
        Outcome::fail,
        fmt::format("cmax-gpucheck did not finish in {:.0f} s: a hung GPU or kernel; {} (stderr: {})", wall_s,
                    kRemedyCuda, tail.empty() ? "empty" : tail),
        true));
  if (run.exit_code == 0 || run.exit_code == 2 || run.exit_code == 3) {
    auto raw = parse_gpu_raw(run.out);
    if (!raw) {
      if (run.exit_code == 2) return stamp(gpu_results_all(Outcome::not_applicable, "no CUDA device"));
      return stamp(gpu_results_all(Outcome::unverified, fmt::format("{} (stderr: {})", raw.error().message, tail)));
    }
    if (run.exit_code == 2 && raw->status == "ok") raw->status = "no_device";
    return stamp(judge_gpu(*raw, t));
  }
  const std::string how = run.exit_code == -1 ? fmt::format("was killed by signal {}", run.signal)
                                              : fmt::format("exited with code {}", run.exit_code);
  return stamp(gpu_results_all(
      Outcome::unverified,
      fmt::format("cmax-gpucheck {} without a result: {}; run it by hand to see why", how, tail.empty() ? "no stderr" : tail)));
}

}  // namespace cmax::health
