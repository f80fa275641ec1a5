#include "probes/gpu_probe.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cstring>
#include <iterator>
#include <utility>

namespace cmax::probes {
namespace {

using namespace nvml;  // NOLINT: the NVML names read as in NVIDIA's documentation
using signals::Kind;

struct ReasonName {
  unsigned long long bit;
  std::string_view id;
  std::string_view text;
};

// The throttle reasons that count as faults, in bit order. SW power cap and idle are how a
// healthy GPU runs, so they are not here.
constexpr ReasonName kReasonNames[] = {
    {nvmlClocksThrottleReasonHwSlowdown, "hw_slowdown", "HW slowdown"},
    {nvmlClocksThrottleReasonSwThermalSlowdown, "sw_thermal_slowdown", "SW thermal slowdown"},
    {nvmlClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown", "HW thermal slowdown"},
    {nvmlClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake", "HW power brake"},
};

// Bounded NVML events per poll, so a storm of Xids cannot hold the poll past its budget by much.
constexpr int kMaxEventsPerPoll = 256;

int clamp_int(unsigned long long v) {
  return v > static_cast<unsigned long long>(INT_MAX) ? INT_MAX : static_cast<int>(v);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string label(const GpuSnapshot& s) {
  std::string where =
      !s.bus_id.empty() ? s.bus_id : fmt::format("index {} (bus id unknown)", s.index);
  return s.uuid.empty() ? where : fmt::format("{} ({})", where, s.uuid);
}

std::string reason_texts(unsigned long long reasons) {
  std::string out;
  for (const ReasonName& r : kReasonNames) {
    if ((reasons & r.bit) == 0) continue;
    if (!out.empty()) out += ", ";
    out += r.text;
  }
  return out;
}

std::string watts(unsigned milliwatts) { return fmt::format("{:.0f} W", milliwatts / 1000.0); }

// A bounded C string from a fixed NVML buffer.
template <std::size_t N>
std::string from_buffer(const char (&buffer)[N]) {
  return std::string(buffer, strnlen(buffer, N));
}

}  // namespace

std::string normalize_bus_id(std::string_view nvml_bus_id) {
  const std::size_t first = nvml_bus_id.find(':');
  if (first == std::string_view::npos) return lower(nvml_bus_id);
  // "06:00.0" has no domain: the kernel's form always has one.
  if (nvml_bus_id.find(':', first + 1) == std::string_view::npos)
    return "0000:" + lower(nvml_bus_id);
  std::string_view domain = nvml_bus_id.substr(0, first);
  unsigned long value = 0;
  auto [end, ec] = std::from_chars(domain.data(), domain.data() + domain.size(), value, 16);
  if (ec != std::errc() || end != domain.data() + domain.size() || domain.empty())
    return lower(nvml_bus_id);
  return fmt::format("{:04x}:{}", value, lower(nvml_bus_id.substr(first + 1)));
}

std::string throttle_reason_names(unsigned long long reasons) {
  std::string out;
  for (const ReasonName& r : kReasonNames) {
    if ((reasons & r.bit) == 0) continue;
    if (!out.empty()) out += ',';
    out += r.id;
  }
  return out;
}

GpuDiff diff_gpu(const GpuState& before, const GpuSnapshot& now, const GpuProbeOptions& options,
                 SteadyTime at) {
  GpuDiff d{{}, before};
  GpuState& next = d.next;
  next.seen = true;
  const std::string who = label(now);
  auto report = [&](Kind kind, int code, bool fatal, std::string subject, std::string what) {
    d.findings.push_back(Finding{kind, code, now.bus_id, std::move(subject), fatal,
                                 fmt::format("nvml: GPU {}: {}", who, what)});
  };

  for (int xid : now.xids) report(Kind::xid, xid, false, now.uuid, fmt::format("Xid {}", xid));

  if (now.lost && !before.lost) {
    report(Kind::gpu_lost, -1, false, now.uuid,
           "the GPU is lost (NVML_ERROR_GPU_IS_LOST): it fell off the bus or stopped answering");
  }
  next.lost = now.lost;

  // A volatile count starts at zero when the driver loads, so a first reading above zero is a rise.
  if (now.ecc_ue_volatile) {
    const unsigned long long was = before.ecc_ue_volatile.value_or(0);
    if (*now.ecc_ue_volatile > was) {
      report(
          Kind::gpu_ecc_ue, clamp_int(*now.ecc_ue_volatile), false, now.uuid,
          fmt::format("volatile uncorrected ECC errors rose {} -> {}", was, *now.ecc_ue_volatile));
    }
    next.ecc_ue_volatile = now.ecc_ue_volatile;
  }

  if (now.remap_pending) {
    if (*now.remap_pending && !before.remap_pending) {
      report(Kind::gpu_row_remap, -1, false, now.uuid,
             "a row remap is pending: reset the GPU to apply it");
    }
    next.remap_pending = *now.remap_pending;
  }
  if (now.remap_failed) {
    if (*now.remap_failed && !before.remap_failed) {
      report(Kind::gpu_row_remap, -1, true, now.uuid,
             "row remapping failed: the GPU's memory cannot be repaired; replace it");
    }
    next.remap_failed = *now.remap_failed;
  }

  if (now.retired_dbe_pages) {
    const unsigned was = before.retired_dbe_pages.value_or(0);
    if (*now.retired_dbe_pages > was) {
      report(Kind::gpu_retired_pages, clamp_int(*now.retired_dbe_pages), false, now.uuid,
             fmt::format("pages retired for double-bit ECC errors rose {} -> {}", was,
                         *now.retired_dbe_pages));
    }
    next.retired_dbe_pages = now.retired_dbe_pages;
  }
  if (now.retirement_pending) {
    if (*now.retirement_pending && !before.retirement_pending) {
      report(Kind::gpu_retired_pages, clamp_int(now.retired_dbe_pages.value_or(0)), true, now.uuid,
             "a page retirement is pending: reset the GPU or reboot to complete it");
    }
    next.retirement_pending = *now.retirement_pending;
  }

  if (now.clock_event_reasons) {
    const unsigned long long active = *now.clock_event_reasons & kFaultThrottleReasons;
    if ((active & ~before.throttle_reasons) != 0) {
      report(Kind::gpu_throttle, static_cast<int>(active), false, throttle_reason_names(active),
             fmt::format("clocks throttled: {}", reason_texts(active)));
    }
    next.throttle_reasons = active;
  }

  if (now.pcie) {
    const PcieLink& l = *now.pcie;
    if (l.width != 0 && l.max_width != 0) next.pcie_width_low = l.width < l.max_width;
    // An idle GPU lowers its link generation to save power; while it is idle a low generation
    // says nothing, so the previous judgement stands until the GPU is busy again.
    const bool busy = now.util_gpu_percent.value_or(0) > 0;
    if (l.gen != 0 && l.max_gen != 0) {
      if (l.gen >= l.max_gen) {
        next.pcie_gen_low = false;
      } else if (busy || options.pcie_gen_when_idle) {
        next.pcie_gen_low = true;
      }
    }
    if ((next.pcie_width_low && !before.pcie_width_low) ||
        (next.pcie_gen_low && !before.pcie_gen_low)) {
      report(Kind::gpu_pcie_link, static_cast<int>(l.width), false, now.uuid,
             fmt::format("PCIe link runs at Gen{} x{}, below its maximum Gen{} x{}", l.gen, l.width,
                         l.max_gen, l.max_width));
    }
  }

  // Half a milliwatt of slack: readings are whole milliwatts, and 0.35 * 700000 is not exact in
  // binary.
  const bool stalled = now.util_gpu_percent && now.power_mw && now.power_limit_mw &&
                       *now.power_limit_mw > 0 && *now.util_gpu_percent >= options.util_min &&
                       *now.power_mw <= options.power_max_fraction * *now.power_limit_mw + 0.5;
  if (!stalled) {
    next.stall_since.reset();
    next.stall_reported = false;
  } else {
    if (!next.stall_since) next.stall_since = at;
    const auto lasted = at - *next.stall_since;
    if (!next.stall_reported && lasted >= options.stall_seconds) {
      report(Kind::gpu_stalled, static_cast<int>(*now.util_gpu_percent), false, now.uuid,
             fmt::format("utilisation {} % while power stays at {} of its {} limit for {} s: a "
                         "stalled collective?",
                         *now.util_gpu_percent, watts(*now.power_mw), watts(*now.power_limit_mw),
                         std::chrono::duration_cast<std::chrono::seconds>(lasted).count()));
      next.stall_reported = true;
    }
  }
  return d;
}

GpuProbe::GpuProbe(nvml::NvmlLibrary library, GpuProbeOptions options)
    : library_(std::move(library)), options_(options) {}

GpuProbe::~GpuProbe() {
  if (event_set_ != nullptr) library_.api().event_set_free(event_set_);
}

void GpuProbe::register_events(Gpu& gpu) {
  if (event_set_ == nullptr) {
    gpu.events_registered = true;
    return;
  }
  const nvmlReturn_t rc =
      library_.api().device_register_events(gpu.handle, nvmlEventTypeXidCriticalError, event_set_);
  // NOT_SUPPORTED (some GPUs, vGPU guests) is final: this GPU's Xids still reach the kernel log.
  // Anything else (a lost GPU) is tried again at the next poll.
  gpu.events_registered = rc == NVML_SUCCESS || rc == NVML_ERROR_NOT_SUPPORTED;
}

std::optional<GpuSnapshot> GpuProbe::read(unsigned index, Gpu& gpu) {
  const NvmlApi& api = library_.api();
  GpuSnapshot s;
  s.index = static_cast<int>(index);
  nvmlDevice_t handle = nullptr;
  const nvmlReturn_t got = api.device_get_handle_by_index(index, &handle);
  if (got == NVML_ERROR_GPU_IS_LOST) {
    s.lost = true;
    s.bus_id = gpu.bus_id;
    s.uuid = gpu.uuid;
    return s;
  }
  if (got != NVML_SUCCESS) return std::nullopt;
  if (handle != gpu.handle) {
    gpu.handle = handle;
    gpu.events_registered = false;
  }
  if (!gpu.events_registered) register_events(gpu);

  // Calls an optional entry point on this GPU; once one call says the GPU is lost, the rest are
  // skipped (each could take the driver's full timeout).
  auto call = [&](auto fn, auto... args) -> nvmlReturn_t {
    if (s.lost || fn == nullptr) return NVML_ERROR_FUNCTION_NOT_FOUND;
    const nvmlReturn_t rc = fn(handle, args...);
    if (rc == NVML_ERROR_GPU_IS_LOST) s.lost = true;
    return rc;
  };
  auto ok = [&](auto fn, auto... args) { return call(fn, args...) == NVML_SUCCESS; };

  nvmlPciInfo_t pci{};
  s.bus_id =
      ok(api.device_get_pci_info, &pci) ? normalize_bus_id(from_buffer(pci.busId)) : gpu.bus_id;
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  s.uuid = ok(api.device_get_uuid, uuid, static_cast<unsigned>(sizeof uuid)) ? from_buffer(uuid)
                                                                             : gpu.uuid;
  if (!s.bus_id.empty() && !gpu.bus_id.empty() && s.bus_id != gpu.bus_id) {
    gpu.state = GpuState{};  // another GPU now answers at this index (the driver reloaded)
  }
  if (!s.bus_id.empty()) gpu.bus_id = s.bus_id;
  if (!s.uuid.empty()) gpu.uuid = s.uuid;

  unsigned long long ecc = 0;
  if (ok(api.device_get_total_ecc_errors, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC,
         &ecc)) {
    s.ecc_ue_volatile = ecc;
  }
  unsigned corr = 0, unc = 0, pending = 0, failed = 0;
  if (ok(api.device_get_remapped_rows, &corr, &unc, &pending, &failed)) {
    s.remap_pending = pending != 0;
    s.remap_failed = failed != 0;
  }
  // A count of 0 with no buffer asks for the count only; NVML answers INSUFFICIENT_SIZE when
  // there are pages, with the count set.
  unsigned pages = 0;
  const nvmlReturn_t rc_pages =
      call(api.device_get_retired_pages, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &pages,
           static_cast<unsigned long long*>(nullptr));
  if (rc_pages == NVML_SUCCESS || rc_pages == NVML_ERROR_INSUFFICIENT_SIZE)
    s.retired_dbe_pages = pages;
  nvmlEnableState_t retire_pending = NVML_FEATURE_DISABLED;
  if (ok(api.device_get_retired_pages_pending_status, &retire_pending)) {
    s.retirement_pending = retire_pending == NVML_FEATURE_ENABLED;
  }
  // R535 renamed the throttle reasons "clock event reasons"; the old name stays as a deprecated
  // alias.
  unsigned long long reasons = 0;
  if (api.device_get_current_clocks_event_reasons != nullptr
          ? ok(api.device_get_current_clocks_event_reasons, &reasons)
          : ok(api.device_get_current_clocks_throttle_reasons, &reasons)) {
    s.clock_event_reasons = reasons;
  }
  PcieLink link;
  const bool gen = ok(api.device_get_curr_pcie_link_generation, &link.gen) &&
                   ok(api.device_get_max_pcie_link_generation, &link.max_gen);
  const bool width = ok(api.device_get_curr_pcie_link_width, &link.width) &&
                     ok(api.device_get_max_pcie_link_width, &link.max_width);
  if (gen || width) {
    if (!gen) link.gen = link.max_gen = 0;
    if (!width) link.width = link.max_width = 0;
    s.pcie = link;
  }
  nvmlUtilization_t util{};
  if (ok(api.device_get_utilization_rates, &util)) s.util_gpu_percent = util.gpu;
  unsigned power = 0;
  if (ok(api.device_get_power_usage, &power)) s.power_mw = power;
  unsigned limit = 0;
  if (ok(api.device_get_enforced_power_limit, &limit)) s.power_limit_mw = limit;
  return s;
}

std::vector<Finding> GpuProbe::drain_events(SteadyTime deadline,
                                            std::vector<std::optional<GpuSnapshot>>& snapshots) {
  std::vector<Finding> unattributed;
  if (event_set_ == nullptr) return unattributed;
  using std::chrono::milliseconds;
  for (int n = 0; n < kMaxEventsPerPoll; ++n) {
    const auto remaining =
        std::chrono::ceil<milliseconds>(deadline - std::chrono::steady_clock::now());
    if (n > 0 && remaining <= milliseconds(0)) break;
    // Only the first wait may last: afterwards the queue is drained with the shortest wait. Never
    // 0, whose meaning NVML does not document.
    const milliseconds limit = n == 0 ? options_.event_wait : milliseconds(1);
    const auto timeout =
        std::clamp(std::min(limit, remaining), milliseconds(1), milliseconds(UINT_MAX));
    nvmlEventData_t data{};
    const nvmlReturn_t rc =
        library_.api().event_set_wait(event_set_, &data, static_cast<unsigned>(timeout.count()));
    if (rc != NVML_SUCCESS)
      break;  // TIMEOUT: nothing more; GPU_IS_LOST: the readings say which GPU
    if ((data.eventType & nvmlEventTypeXidCriticalError) == 0) continue;
    const int xid = clamp_int(data.eventData);
    auto gpu = std::find_if(gpus_.begin(), gpus_.end(),
                            [&](const Gpu& g) { return g.handle == data.device; });
    if (data.device == nullptr || gpu == gpus_.end()) {
      unattributed.push_back(Finding{Kind::xid, xid, "", "", false,
                                     fmt::format("nvml: GPU (unknown device): Xid {}", xid)});
      continue;
    }
    auto& snapshot = snapshots[static_cast<std::size_t>(gpu - gpus_.begin())];
    if (!snapshot) {
      // Not read this poll (the budget ran out first): the event still names the GPU.
      snapshot = GpuSnapshot{};
      snapshot->index = static_cast<int>(gpu - gpus_.begin());
      snapshot->bus_id = gpu->bus_id;
      snapshot->uuid = gpu->uuid;
    }
    snapshot->xids.push_back(xid);
  }
  return unattributed;
}

Result<std::vector<Finding>> GpuProbe::poll(std::chrono::milliseconds budget) {
  const SteadyTime deadline = std::chrono::steady_clock::now() + budget;
  const NvmlApi& api = library_.api();
  unsigned count = 0;
  if (const nvmlReturn_t rc = api.device_get_count(&count); rc != NVML_SUCCESS) {
    return fail("count GPUs through NVML ({}): {}: does nvidia-smi work on this host?",
                library_.path(), library_.error_string(rc));
  }
  if (!event_set_tried_) {
    event_set_tried_ = true;
    if (api.event_set_create != nullptr && api.device_register_events != nullptr &&
        api.event_set_wait != nullptr && api.event_set_free != nullptr &&
        api.event_set_create(&event_set_) != NVML_SUCCESS) {
      event_set_ = nullptr;
    }
  }
  gpus_.resize(count);
  std::vector<std::optional<GpuSnapshot>> snapshots(count);
  std::vector<bool> read_now(count, false);
  for (unsigned i = 0; i < count; ++i) {
    // The first GPU is always read, so a tiny budget still makes progress.
    if (i > 0 && std::chrono::steady_clock::now() >= deadline) break;
    snapshots[i] = read(i, gpus_[i]);
    read_now[i] = snapshots[i].has_value();
  }
  std::vector<Finding> findings = drain_events(deadline, snapshots);
  const SteadyTime at = std::chrono::steady_clock::now();
  for (unsigned i = 0; i < count; ++i) {
    if (!snapshots[i]) continue;
    GpuDiff d = diff_gpu(gpus_[i].state, *snapshots[i], options_, at);
    // A GPU left unread (budget spent) has only its Xid events: its state waits for a reading.
    if (read_now[i]) gpus_[i].state = std::move(d.next);
    std::move(d.findings.begin(), d.findings.end(), std::back_inserter(findings));
  }
  return findings;
}

}  // namespace cmax::probes
