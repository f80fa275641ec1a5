#include "probes/nvml_api.h"

#include <dlfcn.h>

#include <string_view>
#include <type_traits>
#include <utility>

namespace cmax::probes::nvml {
namespace {

template <auto Member>
void assign(NvmlApi& api, void* symbol) {
  using Pointer = std::remove_reference_t<decltype(api.*Member)>;
  api.*Member = reinterpret_cast<Pointer>(symbol);
}

struct Symbol {
  const char* name;
  bool required;
  void (*assign)(NvmlApi&, void*);
};

// Every entry of NvmlApi and the exact symbol nvml.h maps it to.
constexpr Symbol kSymbols[] = {
    {"nvmlInit_v2", true, assign<&NvmlApi::init>},
    {"nvmlShutdown", true, assign<&NvmlApi::shutdown>},
    {"nvmlDeviceGetCount_v2", true, assign<&NvmlApi::device_get_count>},
    {"nvmlDeviceGetHandleByIndex_v2", true, assign<&NvmlApi::device_get_handle_by_index>},
    {"nvmlDeviceGetPciInfo_v3", true, assign<&NvmlApi::device_get_pci_info>},
    {"nvmlDeviceGetUUID", true, assign<&NvmlApi::device_get_uuid>},
    {"nvmlErrorString", false, assign<&NvmlApi::error_string>},
    {"nvmlDeviceGetTotalEccErrors", false, assign<&NvmlApi::device_get_total_ecc_errors>},
    {"nvmlDeviceGetRemappedRows", false, assign<&NvmlApi::device_get_remapped_rows>},
    {"nvmlDeviceGetRetiredPages", false, assign<&NvmlApi::device_get_retired_pages>},
    {"nvmlDeviceGetRetiredPagesPendingStatus", false,
     assign<&NvmlApi::device_get_retired_pages_pending_status>},
    {"nvmlDeviceGetCurrentClocksEventReasons", false,
     assign<&NvmlApi::device_get_current_clocks_event_reasons>},
    {"nvmlDeviceGetCurrentClocksThrottleReasons", false,
     assign<&NvmlApi::device_get_current_clocks_throttle_reasons>},
    {"nvmlDeviceGetCurrPcieLinkGeneration", false,
     assign<&NvmlApi::device_get_curr_pcie_link_generation>},
    {"nvmlDeviceGetMaxPcieLinkGeneration", false,
     assign<&NvmlApi::device_get_max_pcie_link_generation>},
    {"nvmlDeviceGetCurrPcieLinkWidth", false, assign<&NvmlApi::device_get_curr_pcie_link_width>},
    {"nvmlDeviceGetMaxPcieLinkWidth", false, assign<&NvmlApi::device_get_max_pcie_link_width>},
    {"nvmlDeviceGetUtilizationRates", false, assign<&NvmlApi::device_get_utilization_rates>},
    {"nvmlDeviceGetPowerUsage", false, assign<&NvmlApi::device_get_power_usage>},
    {"nvmlDeviceGetEnforcedPowerLimit", false, assign<&NvmlApi::device_get_enforced_power_limit>},
    {"nvmlEventSetCreate", false, assign<&NvmlApi::event_set_create>},
    {"nvmlDeviceRegisterEvents", false, assign<&NvmlApi::device_register_events>},
    {"nvmlEventSetWait_v2", false, assign<&NvmlApi::event_set_wait>},
    {"nvmlEventSetFree", false, assign<&NvmlApi::event_set_free>},
};

std::string last_dl_error() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown dynamic loader error";
}

// What an operator should check after nvmlInit_v2 fails with `rc`.
std::string_view init_hint(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "is the nvidia kernel module loaded (lsmod | grep nvidia)?";
    case NVML_ERROR_NO_PERMISSION:
      return "run cmaxd as root or give it access to /dev/nvidia*";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "the library and the kernel module are from different driver versions: reboot or "
             "reload the driver";
    default:
      return "does nvidia-smi work on this host?";
  }
}

}  // namespace

Result<NvmlLibrary> NvmlLibrary::open(const std::string& path) {
  // RTLD_LOCAL keeps NVML's symbols out of the global namespace; RTLD_NOW surfaces unresolved
  // dependencies here rather than at the first call.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return fail("load {}: {}: is the NVIDIA driver installed?", path, last_dl_error());
  }
  NvmlApi api;
  for (const Symbol& s : kSymbols) {
    void* symbol = dlsym(handle, s.name);
    if (symbol == nullptr && s.required) {
      dlclose(handle);
      return fail(
          "load {}: symbol {} missing: is this NVIDIA's libnvidia-ml.so.1, and is the driver "
          "current?",
          path, s.name);
    }
    s.assign(api, symbol);
  }
  if (nvmlReturn_t rc = api.init(); rc != NVML_SUCCESS) {
    std::string text = api.error_string != nullptr && api.error_string(rc) != nullptr
                           ? std::string(api.error_string(rc))
                           : fmt::format("NVML error {}", static_cast<unsigned>(rc));
    dlclose(handle);
    return fail("initialise NVML ({}): {}: {}", path, text, init_hint(rc));
  }
  return NvmlLibrary(handle, api, path);
}

NvmlLibrary::NvmlLibrary(void* handle, NvmlApi api, std::string path)
    : handle_(handle), api_(api), path_(std::move(path)) {}

NvmlLibrary::NvmlLibrary(NvmlLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      api_(std::exchange(other.api_, NvmlApi{})),
      path_(std::move(other.path_)) {}

NvmlLibrary& NvmlLibrary::operator=(NvmlLibrary&& other) noexcept {
  if (this != &other) {
    close();
    handle_ = std::exchange(other.handle_, nullptr);
    api_ = std::exchange(other.api_, NvmlApi{});
    path_ = std::move(other.path_);
  }
  return *this;
}

NvmlLibrary::~NvmlLibrary() { close(); }

void NvmlLibrary::close() {
  if (handle_ == nullptr) return;
  // A failed shutdown leaves nothing to do: the process is letting go of NVML either way.
  api_.shutdown();
  dlclose(handle_);
  handle_ = nullptr;
  api_ = NvmlApi{};
}

std::string NvmlLibrary::error_string(nvmlReturn_t rc) const {
  if (api_.error_string != nullptr) {
    if (const char* text = api_.error_string(rc); text != nullptr) return text;
  }
  return fmt::format("NVML error {}", static_cast<unsigned>(rc));
}

}  // namespace cmax::probes::nvml
