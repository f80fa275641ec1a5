// A fake libnvidia-ml.so.1 for tests: the NVML entry points cmaxd's GPU probe loads, with the
// ABI of probes/nvml_api.h (nvml.h's), answering from a small text file. The file is re-read on
// every call, so a test (or a separate cmaxd process) changes the GPUs by rewriting it:
//
//   init 9                      optional: nvmlInit_v2 fails with this nvmlReturn_t
//   gpu 0 bus 0000:06:00.0 uuid GPU-1 util 95 power_mw 120000 limit_mw 700000 ecc_ue 0 ...
//   xid 0 79                    an Xid event on GPU 0, delivered once by nvmlEventSetWait_v2
//
// gpu keys (defaults: a healthy idle Gen5 x16 GPU): bus uuid util power_mw limit_mw ecc_ue
// remap_pending remap_failed retired_dbe retired_pending throttle (reason bits, 0x.. allowed)
// pcie_gen pcie_max_gen pcie_width pcie_max_width lost (1: every query says GPU_IS_LOST)
// unsupported (comma list of ecc,remap,retired,throttle,pcie,util,power,events: NOT_SUPPORTED).
// Not thread-safe: one thread calls it, as the probe does.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "probes/nvml_api.h"

namespace cmax::probes::nvml {
// The opaque handles, defined only here: a handle is the address of a slot.
struct nvmlDevice_st {
  unsigned index;
};
struct nvmlEventSet_st {
  bool in_use;
  unsigned long long types[64];
};
}  // namespace cmax::probes::nvml

namespace {

using namespace cmax::probes::nvml;  // NOLINT: NVML's names, as the ABI spells them

constexpr unsigned kMaxGpus = 64;

struct FakeGpu {
  bool present = false;
  unsigned domain = 0, bus = 0, device = 0;
  std::string uuid;
  unsigned util = 0;
  unsigned power_mw = 50000;
  unsigned limit_mw = 700000;
  unsigned long long ecc_ue = 0;
  unsigned remap_pending = 0, remap_failed = 0;
  unsigned retired_dbe = 0, retired_pending = 0;
  unsigned long long throttle = 0;
  unsigned pcie_gen = 5, pcie_max_gen = 5, pcie_width = 16, pcie_max_width = 16;
  bool lost = false;
  std::string unsupported;  // ",ecc,pcie,"

  bool supports(const char* reading) const {
    return unsupported.find("," + std::string(reading) + ",") == std::string::npos;
  }
};

struct XidLine {
  unsigned gpu;
  unsigned long long xid;
};

struct FakeState {
  bool readable = false;
  int init_rc = -1;
  unsigned count = 0;
  FakeGpu gpus[kMaxGpus];
  std::vector<XidLine> xids;
};

nvmlDevice_st g_slots[kMaxGpus];
nvmlEventSet_st g_sets[4];
int g_init_count = 0;
// Xid lines already handed out, of the state file at g_consumed_path.
std::string g_consumed_path;
std::size_t g_consumed = 0;

const char* state_path() {
  const char* p = std::getenv("CMAX_FAKE_NVML_STATE");
  return p != nullptr && *p != '\0' ? p : nullptr;
}

bool parse_bus(const std::string& s, FakeGpu& g) {
  // "0000:06:00.0" or NVML's "00000000:06:00.0".
  return std::sscanf(s.c_str(), "%x:%x:%x", &g.domain, &g.bus, &g.device) == 3;
}

// The numeric keys of a gpu line and the fields they set.
constexpr std::pair<std::string_view, unsigned FakeGpu::*> kNarrowKeys[] = {
    {"util", &FakeGpu::util},
    {"power_mw", &FakeGpu::power_mw},
    {"limit_mw", &FakeGpu::limit_mw},
    {"remap_pending", &FakeGpu::remap_pending},
    {"remap_failed", &FakeGpu::remap_failed},
    {"retired_dbe", &FakeGpu::retired_dbe},
    {"retired_pending", &FakeGpu::retired_pending},
    {"pcie_gen", &FakeGpu::pcie_gen},
    {"pcie_max_gen", &FakeGpu::pcie_max_gen},
    {"pcie_width", &FakeGpu::pcie_width},
    {"pcie_max_width", &FakeGpu::pcie_max_width},
};
constexpr std::pair<std::string_view, unsigned long long FakeGpu::*> kWideKeys[] = {
    {"ecc_ue", &FakeGpu::ecc_ue},
    {"throttle", &FakeGpu::throttle},
};

void set_key(FakeGpu& g, const std::string& key, const std::string& value) {
  const unsigned long long n = std::strtoull(value.c_str(), nullptr, 0);  // 0x.. allowed
  if (key == "bus") parse_bus(value, g);
  if (key == "uuid") g.uuid = value;
  if (key == "lost") g.lost = n != 0;
  if (key == "unsupported") g.unsupported = "," + value + ",";
  for (const auto& [name, field] : kNarrowKeys) {
    if (key == name) g.*field = static_cast<unsigned>(n);
  }
  for (const auto& [name, field] : kWideKeys) {
    if (key == name) g.*field = n;
  }
}

FakeState load() {
  FakeState st;
  const char* path = state_path();
  if (path == nullptr) return st;
  std::ifstream in(path);
  if (!in) return st;
  st.readable = true;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind;
    if (!(words >> kind) || kind[0] == '#') continue;
    if (kind == "init") {
      words >> st.init_rc;
    } else if (kind == "xid") {
      XidLine x{};
      if (words >> x.gpu >> x.xid) st.xids.push_back(x);
    } else if (kind == "gpu") {
      unsigned index = 0;
      if (!(words >> index) || index >= kMaxGpus) continue;
      FakeGpu& g = st.gpus[index];
      g.present = true;
      if (index + 1 > st.count) st.count = index + 1;
      std::string key, value;
      while (words >> key >> value) {
        set_key(g, key, value);
      }
    }
  }
  return st;
}

// The GPU behind `device` in the current state, or an error for the caller to return.
nvmlReturn_t lookup(nvmlDevice_t device, const FakeState& st, const FakeGpu*& out,
                    const char* reading = nullptr) {
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || device < g_slots || device >= g_slots + kMaxGpus)
    return NVML_ERROR_INVALID_ARGUMENT;
  const FakeGpu& g = st.gpus[device->index];
  if (!g.present) return NVML_ERROR_INVALID_ARGUMENT;
  if (g.lost) return NVML_ERROR_GPU_IS_LOST;
  if (reading != nullptr && !g.supports(reading)) return NVML_ERROR_NOT_SUPPORTED;
  out = &g;
  return NVML_SUCCESS;
}

}  // namespace

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2() {
  const FakeState st = load();
  if (!st.readable) return NVML_ERROR_DRIVER_NOT_LOADED;
  if (st.init_rc >= 0) return static_cast<nvmlReturn_t>(st.init_rc);
  ++g_init_count;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown() {
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  --g_init_count;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    default:
      return "Unknown Error";
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = load().count;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                            nvmlDevice_t* device) {
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  const FakeState st = load();
  if (device == nullptr || index >= st.count || !st.gpus[index].present)
    return NVML_ERROR_INVALID_ARGUMENT;
  g_slots[index].index = index;
  *device = &g_slots[index];
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  const FakeState st = load();
  const FakeGpu* g = nullptr;
  if (nvmlReturn_t rc = lookup(device, st, g); rc != NVML_SUCCESS) return rc;
  if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *pci = nvmlPciInfo_t{};
  // nvml.h NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT and NVML_DEVICE_PCI_BUS_ID_FMT.
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", g->domain & 0xffffu,
                g->bus, g->device);
  std::snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", g->domain, g->bus, g->device);
  pci->domain = g->domain;
  pci->bus = g->bus;
  pci->device = g->device;
  pci->pciDeviceId = 0x233010DE;  // H100 SXM5, vendor 0x10DE
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                                unsigned int length) {
  const FakeState st = load();
  const FakeGpu* g = nullptr;
  if (nvmlReturn_t rc = lookup(device, st, g); rc != NVML_SUCCESS) return rc;
  if (uuid == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (length < g->uuid.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(uuid, g->uuid.c_str(), g->uuid.size() + 1);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device,
                                                          nvmlMemoryErrorType_t type,
                                                          nvmlEccCounterType_t counter,
                                                          unsigned long long* count) {
  const FakeState st = load();
  const FakeGpu* g = nullptr;
  if (nvmlReturn_t rc = lookup(device, st, g, "ecc"); rc != NVML_SUCCESS) return rc;
  if (count == nullptr || type > NVML_MEMORY_ERROR_TYPE_UNCORRECTED ||
      counter > NVML_AGGREGATE_ECC) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  // The fake keeps only volatile uncorrected errors; the other counters read 0.
  *count =
      type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED && counter == NVML_VOLATILE_ECC ? g->ecc_ue : 0;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device,
                                                        unsigned int* corr_rows,
                                                        unsigned int* unc_rows,
                                                        unsigned int* is_pending,
                                                        unsigned int* failure_occurred) {
  const FakeState st = load();
  const FakeGpu* g = nullptr;
  if (nvmlReturn_t rc = lookup(device, st, g, "remap"); rc != NVML_SUCCESS) return rc;
  if (corr_rows == nullptr || unc_rows == nullptr || is_pending == nullptr ||
      failure_occurred == nullptr) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  *corr_rows = 0;
  *unc_rows = g->remap_pending != 0 ? 1 : 0;
  *is_pending = g->remap_pending;
  *failure_occurred = g->remap_failed;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device,
                                                        nvmlPageRetirementCause_t cause,
                                                        unsigned int* page_count,
                                                        unsigned long long* addresses) {
  const FakeState st = load();
  const FakeGpu* g = nullptr;
  if (nvmlReturn_t rc = lookup(device, st, g, "retired"); rc != NVML_SUCCESS) return rc;
  if (page_count == nullptr || cause > NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const unsigned have =
      cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? g->retired_dbe : 0;
  if (*page_count < have) {
    *page_count = have;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  if (have > 0 && addresses == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < have; ++i) addresses[i] = 0x1000ULL * (i + 1);
  *page_count = have;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                                     nvmlEnableState_t* pending) {
  const FakeState st = load();
  const FakeGpu* g = nullptr;
  if (nvmlReturn_t rc = lookup(device, st, g, "retired"); rc != NVML_SUCCESS) return rc;
  if (pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *pending = g->retired_pending != 0 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

namespace {
nvmlReturn_t clock_reasons(nvmlDevice_t device, unsigned long long* reasons) {
  const FakeState st = load();
  const FakeGpu* g = nullptr;
  if (nvmlReturn_t rc = lookup(device, st, g, "throttle"); rc != NVML_SUCCESS) return rc;
  if (reasons == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *reasons = g->throttle;
  return NVML_SUCCESS;
}

nvmlReturn_t pcie(nvmlDevice_t device, unsigned int* out, unsigned FakeGpu::*field) {
  const FakeState st = load();
  const FakeGpu* g = nullptr;
  if (nvmlReturn_t rc = lookup(device, st, g, "pcie"); rc != NVML_SUCCESS) return rc;
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *out = g->*field;
  return NVML_SUCCESS;
}

nvmlReturn_t power(nvmlDevice_t device, unsigned int* out, unsigned FakeGpu::*field) {
  const FakeState st = load();
  const FakeGpu* g = nullptr;
  if (nvmlReturn_t rc = lookup(device, st, g, "power"); rc != NVML_SUCCESS) return rc;
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *out = g->*field;
  return NVML_SUCCESS;
}
}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                                     unsigned long long* reasons) {
  return clock_reasons(device, reasons);
}

FAKE_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long* reasons) {
  return clock_reasons(device, reasons);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device,
                                                                  unsigned int* gen) {
  return pcie(device, gen, &FakeGpu::pcie_gen);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device,
                                                                 unsigned int* gen) {
  return pcie(device, gen, &FakeGpu::pcie_max_gen);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device,
                                                             unsigned int* width) {
  return pcie(device, width, &FakeGpu::pcie_width);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device,
                                                            unsigned int* width) {
  return pcie(device, width, &FakeGpu::pcie_max_width);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                            nvmlUtilization_t* util) {
  const FakeState st = load();
  const FakeGpu* g = nullptr;
  if (nvmlReturn_t rc = lookup(device, st, g, "util"); rc != NVML_SUCCESS) return rc;
  if (util == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  util->gpu = g->util;
  util->memory = g->util / 2;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device,
                                                      unsigned int* milliwatts) {
  return power(device, milliwatts, &FakeGpu::power_mw);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device,
                                                              unsigned int* milliwatts) {
  return power(device, milliwatts, &FakeGpu::limit_mw);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (nvmlEventSet_st& s : g_sets) {
    if (s.in_use) continue;
    s = nvmlEventSet_st{};
    s.in_use = true;
    *set = &s;
    return NVML_SUCCESS;
  }
  return NVML_ERROR_MEMORY;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                                       unsigned long long types,
                                                       nvmlEventSet_t set) {
  const FakeState st = load();
  const FakeGpu* g = nullptr;
  if (nvmlReturn_t rc = lookup(device, st, g, "events"); rc != NVML_SUCCESS) return rc;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if ((types & ~nvmlEventTypeXidCriticalError) != 0) return NVML_ERROR_NOT_SUPPORTED;
  set->types[device->index] |= types;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                  unsigned int timeout_ms) {
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const FakeState st = load();
    const char* path = state_path();
    if (path == nullptr || g_consumed_path != path) {
      g_consumed_path = path != nullptr ? path : "";
      g_consumed = 0;
    }
    while (g_consumed < st.xids.size()) {
      const XidLine x = st.xids[g_consumed++];
      if (x.gpu >= kMaxGpus || (set->types[x.gpu] & nvmlEventTypeXidCriticalError) == 0) continue;
      g_slots[x.gpu].index = x.gpu;
      *data = nvmlEventData_t{&g_slots[x.gpu], nvmlEventTypeXidCriticalError, x.xid, 0xFFFFFFFFu,
                              0xFFFFFFFFu};
      return NVML_SUCCESS;
    }
    if (std::chrono::steady_clock::now() >= deadline) return NVML_ERROR_TIMEOUT;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<unsigned>(timeout_ms, 5)));
  }
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *set = nvmlEventSet_st{};
  return NVML_SUCCESS;
}

/// Not NVML: how many nvmlInit_v2 calls are not yet matched by nvmlShutdown (tests check RAII).
FAKE_NVML_EXPORT int cmax_fake_nvml_init_count() { return g_init_count; }

// The exported functions have exactly the types of the probe's table (probes/nvml_api.h).
#define FAKE_NVML_SAME_TYPE(symbol, entry)                                   \
  static_assert(std::is_same_v<decltype(&symbol), decltype(NvmlApi::entry)>, \
                #symbol " differs from NvmlApi::" #entry)
FAKE_NVML_SAME_TYPE(nvmlInit_v2, init);
FAKE_NVML_SAME_TYPE(nvmlShutdown, shutdown);
FAKE_NVML_SAME_TYPE(nvmlErrorString, error_string);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetCount_v2, device_get_count);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetHandleByIndex_v2, device_get_handle_by_index);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetPciInfo_v3, device_get_pci_info);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetUUID, device_get_uuid);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetTotalEccErrors, device_get_total_ecc_errors);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetRemappedRows, device_get_remapped_rows);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetRetiredPages, device_get_retired_pages);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetRetiredPagesPendingStatus,
                    device_get_retired_pages_pending_status);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetCurrentClocksEventReasons,
                    device_get_current_clocks_event_reasons);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetCurrentClocksThrottleReasons,
                    device_get_current_clocks_throttle_reasons);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetCurrPcieLinkGeneration, device_get_curr_pcie_link_generation);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetMaxPcieLinkGeneration, device_get_max_pcie_link_generation);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetCurrPcieLinkWidth, device_get_curr_pcie_link_width);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetMaxPcieLinkWidth, device_get_max_pcie_link_width);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetUtilizationRates, device_get_utilization_rates);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetPowerUsage, device_get_power_usage);
FAKE_NVML_SAME_TYPE(nvmlDeviceGetEnforcedPowerLimit, device_get_enforced_power_limit);
FAKE_NVML_SAME_TYPE(nvmlEventSetCreate, event_set_create);
FAKE_NVML_SAME_TYPE(nvmlDeviceRegisterEvents, device_register_events);
FAKE_NVML_SAME_TYPE(nvmlEventSetWait_v2, event_set_wait);
FAKE_NVML_SAME_TYPE(nvmlEventSetFree, event_set_free);
