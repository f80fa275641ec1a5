#include "health/gpu_tool_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/process.h"
#include "gputools/dcgm_diag.h"
#include "gputools/nvbandwidth.h"
#include "gputools/smi_csv.h"
#include "gputools/smi_xml.h"
#include "gputools/topo.h"
#include "health/gpu_smi_judge.h"
#include "health/gpu_tools_judge.h"

namespace cmax::health {
namespace {

constexpr std::uintmax_t kMaxFileBytes = 64u << 20;

bool has(std::string_view text, std::string_view needle) { return text.find(needle) != std::string_view::npos; }

// One unverified result for an output that could not be used: never a pass on evidence not read.
CheckResult unusable(std::string_view origin, const std::string& why) {
  CheckResult r;
  r.id = "gpu.tool_output";
  r.outcome = audit::Outcome::unverified;
  r.title = "NVIDIA tool output";
  r.target = std::string(origin);
  r.summary = why;
  r.reason = why;
  return r;
}

// The model nvidia-smi names for the node's GPUs (the first one; mixed nodes are rare and the
// per-GPU judges do not need it).
std::string smi_model(const gputools::SmiReport& report) {
  for (const auto& g : report.gpus)
    if (!g.product_name.empty()) return g.product_name;
  return {};
}

CheckResult tag(CheckResult r, std::string_view origin) {
  if (!origin.empty() && r.summary.find(origin) == std::string::npos) r.summary += fmt::format(" [{}]", origin);
  return r;
}

}  // namespace

std::string_view gpu_tool_kind_name(GpuToolKind k) {
  switch (k) {
    case GpuToolKind::smi_xml: return "nvidia-smi -q -x";
    case GpuToolKind::smi_csv: return "nvidia-smi --query-gpu CSV";
    case GpuToolKind::topo: return "nvidia-smi topo -m";
    case GpuToolKind::dcgm_diag: return "dcgmi diag";
    case GpuToolKind::nvbandwidth: return "nvbandwidth";
  }
  return "?";
}

std::optional<GpuToolKind> detect_gpu_tool_output(std::string_view text) {
  const std::string_view head = text.substr(0, 8192);
  if (has(head, "<nvidia_smi_log")) return GpuToolKind::smi_xml;
  if (has(head, "\"DCGM GPU Diagnostic\"") || has(head, "\"DCGM Diagnostic\"") ||
      has(head, "Successfully ran diagnostic") || (has(head, "| Diagnostic") && has(head, "+----")))
    return GpuToolKind::dcgm_diag;
  if (has(head, "\"nvbandwidth\"") || has(head, "nvbandwidth Version") || has(head, "Running host_to_device") ||
      has(head, "Running device_to_"))
    return GpuToolKind::nvbandwidth;
  if (has(head, "GPU0") && (has(head, "Legend:") || has(head, "CPU Affinity") || has(head, "NUMA Affinity")))
    return GpuToolKind::topo;
  const auto eol = head.find('\n');
  const std::string_view first = head.substr(0, eol);
  if (has(first, ", ") && (has(first, "name") || has(first, "pci.bus_id") || has(first, "index") || has(first, "uuid")))
    return GpuToolKind::smi_csv;
  return std::nullopt;
}

std::vector<CheckResult> judge_gpu_tool_output(std::string_view text, std::string_view origin,
                                               const GpuThresholds& thresholds, const GpuToolContext& context) {
  const auto kind = detect_gpu_tool_output(text);
  if (!kind && has(text.substr(0, 8192), "# nThread"))
    return {unusable(origin, fmt::format("{}: nccl-tests output, not a GPU tool's: judge it with cmax nccl analyze",
                                         origin))};
  if (!kind)
    return {unusable(origin, fmt::format("{}: not an output of nvidia-smi -q -x, --query-gpu CSV, topo -m, dcgmi "
                                         "diag or nvbandwidth; give one of those", origin))};
  auto parse_failed = [&](const std::string& message) {
    return std::vector<CheckResult>{unusable(
        origin, fmt::format("{} ({}) could not be read: {}; capture it again, whole", origin, gpu_tool_kind_name(*kind),
                            message))};
  };
  std::vector<CheckResult> out;
  switch (*kind) {
    case GpuToolKind::smi_xml:
    case GpuToolKind::smi_csv: {
      auto report = *kind == GpuToolKind::smi_xml ? gputools::parse_smi_xml(text) : gputools::parse_smi_csv(text);
      if (!report) return parse_failed(report.error().message);
      out = judge_smi(*report);
      break;
    }
    case GpuToolKind::topo: {
      auto topo = gputools::parse_topo_matrix(text);
      if (!topo) return parse_failed(topo.error().message);
      TopoJudgeOptions o;
      o.gpu_model = context.gpu_model;
      out.push_back(judge_topology(*topo, thresholds, o));
      break;
    }
    case GpuToolKind::dcgm_diag: {
      auto diag = gputools::parse_dcgm_diag(text);
      if (!diag) return parse_failed(diag.error().message);
      out = judge_dcgm_diag(*diag);
      break;
    }
    case GpuToolKind::nvbandwidth: {
      auto run = gputools::parse_nvbandwidth(text);
      if (!run) return parse_failed(run.error().message);
      out = judge_nvbandwidth(*run, &thresholds, context.gpu_model);
      break;
    }
  }
  for (auto& r : out) r = tag(std::move(r), origin);
  return out;
}

std::vector<CheckResult> judge_gpu_tool_files(const std::vector<std::string>& paths, const GpuThresholds& thresholds) {
  struct Loaded {
    std::string path, text;
    std::optional<GpuToolKind> kind;
  };
  std::vector<Loaded> files;
  std::vector<CheckResult> out;
  for (const auto& p : paths) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(p, ec);
    if (ec) {
      out.push_back(unusable(p, fmt::format("read {}: {}; check the path", p, ec.message())));
      continue;
    }
    if (size > kMaxFileBytes) {
      out.push_back(unusable(p, fmt::format("read {}: {} bytes, more than any NVIDIA tool prints ({} MiB); give the "
                                            "tool's output alone", p, size, kMaxFileBytes >> 20)));
      continue;
    }
    std::ifstream in(p, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in && !in.eof()) {
      out.push_back(unusable(p, fmt::format("read {}: failed; check its permissions", p)));
      continue;
    }
    Loaded l{p, text.str(), {}};
    l.kind = detect_gpu_tool_output(l.text);
    files.push_back(std::move(l));
  }
  // nvidia-smi first: its product name keys the topology and nvbandwidth floors.
  std::stable_sort(files.begin(), files.end(), [](const Loaded& a, const Loaded& b) {
    auto rank = [](const Loaded& l) {
      return l.kind == GpuToolKind::smi_xml || l.kind == GpuToolKind::smi_csv ? 0 : 1;
    };
    return rank(a) < rank(b);
  });
  GpuToolContext context;
  for (const auto& f : files) {
    if (context.gpu_model.empty() && (f.kind == GpuToolKind::smi_xml || f.kind == GpuToolKind::smi_csv)) {
      auto report = f.kind == GpuToolKind::smi_xml ? gputools::parse_smi_xml(f.text) : gputools::parse_smi_csv(f.text);
      if (report) context.gpu_model = smi_model(*report);
    }
    auto results = judge_gpu_tool_output(f.text, f.path, thresholds, context);
    out.insert(out.end(), std::make_move_iterator(results.begin()), std::make_move_iterator(results.end()));
  }
  return out;
}

std::vector<CheckResult> run_live_gpu_tools(const GpuThresholds& thresholds, std::chrono::milliseconds timeout,
                                            const std::string& nvidia_smi) {
  const auto program = nvidia_smi.find('/') != std::string::npos ? std::optional<std::string>(nvidia_smi)
                                                                  : core::find_program(nvidia_smi);
  if (!program) return {};
  std::vector<CheckResult> out;
  GpuToolContext context;
  auto run = [&](std::vector<std::string> args, std::string_view what, std::string_view id) {
    core::ProcessSpec spec;
    spec.argv = {*program};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.timeout = timeout;
    spec.max_output_bytes = 32u << 20;
    auto r = core::run_process(spec);
    if (!r) {
      out.push_back(unusable(what, fmt::format("start {}: {}", what, r.error().message)));
      return std::string();
    }
    if (r->timed_out) {
      CheckResult c = unusable(what, fmt::format("{} did not answer in {} ms: the NVIDIA driver is stuck (a GPU "
                                                 "that fell off the bus, a hung reset); drain the node and look "
                                                 "for Xid 79 in the kernel log", what, timeout.count()));
      c.id = std::string(id);
      c.outcome = audit::Outcome::fail;
      c.timed_out = true;
      out.push_back(std::move(c));
      return std::string();
    }
    if (r->exit_code != 0) {
      std::string tail = r->err.empty() ? r->out : r->err;
      if (tail.size() > 300) tail = tail.substr(tail.size() - 300);
      CheckResult c = unusable(what, fmt::format("{} exited {}: {}", what, r->exit_code, tail));
      c.id = std::string(id);
      out.push_back(std::move(c));
      return std::string();
    }
    return std::move(r->out);
  };
  const std::string xml = run({"-q", "-x"}, "nvidia-smi -q -x", kSmiCheckId);
  if (!xml.empty()) {
    if (auto report = gputools::parse_smi_xml(xml)) context.gpu_model = smi_model(*report);
    auto results = judge_gpu_tool_output(xml, "", thresholds, context);
    out.insert(out.end(), results.begin(), results.end());
  }
  const std::string topo = run({"topo", "-m"}, "nvidia-smi topo -m", "gpu.topology");
  if (!topo.empty()) {
    auto results = judge_gpu_tool_output(topo, "", thresholds, context);
    out.insert(out.end(), results.begin(), results.end());
  }
  return out;
}

}  // namespace cmax::health
