#pragma once
// The subset of NVIDIA's NVML C ABI that cmaxd's GPU probe uses, declared here because no NVIDIA
// header may be vendored or installed, and the library loaded with dlopen so that cmaxd runs (and
// reports "no driver") on hosts without one.
//
// Every type, constant, struct layout and versioned symbol name below is copied from nvml.h as
// NVIDIA publishes it (NVML API Reference, https://docs.nvidia.com/deploy/nvml-api/ : "Device
// Structs", "Device Enums", "Event Handling Methods", "NvmlClocksEventReasons", "Device Queries";
// the _v2/_v3 names are what nvml.h's NVML_NO_UNVERSIONED_FUNC_DEFS block maps nvmlInit,
// nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex, nvmlDeviceGetPciInfo and nvmlEventSetWait to).
// The names keep NVIDIA's spelling so each line can be checked against that reference; the
// static_asserts below pin the struct layouts of the x86-64 and aarch64 Linux ABI.
// tests/support/fake_nvml implements the same symbols for the tests.

#include <cstddef>
#include <string>

#include "core/result.h"

namespace cmax::probes::nvml {

/// nvmlReturn_t (nvml.h "nvmlReturn_enum"). The enums below are C enums, 4 bytes like GCC lays
/// them out in C; the fixed underlying type keeps values a newer library adds well-defined.
enum nvmlReturn_t : unsigned int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_UNKNOWN = 999,
};

/// nvmlEnableState_t.
enum nvmlEnableState_t : unsigned int { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };

/// nvmlMemoryErrorType_t.
enum nvmlMemoryErrorType_t : unsigned int {
  NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
  NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
};

/// nvmlEccCounterType_t: volatile counts reset when the driver reloads; aggregate ones persist.
enum nvmlEccCounterType_t : unsigned int { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };

/// nvmlPageRetirementCause_t.
enum nvmlPageRetirementCause_t : unsigned int {
  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
};

/// Opaque handles (nvml.h: typedef struct nvmlDevice_st* nvmlDevice_t, and the same for sets).
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlEventSet_st;
using nvmlEventSet_t = nvmlEventSet_st*;

inline constexpr std::size_t NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32;
inline constexpr std::size_t NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16;
/// The UUID buffer size nvml.h guarantees large enough (NVML_DEVICE_UUID_V2_BUFFER_SIZE).
inline constexpr std::size_t NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;

/// nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3. busId reads "00000000:06:00.0" (an
/// 8-digit upper-case domain, nvml.h NVML_DEVICE_PCI_BUS_ID_FMT "%08X:%02X:%02X.0").
struct nvmlPciInfo_t {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
};
static_assert(sizeof(nvmlPciInfo_t) == 68 && offsetof(nvmlPciInfo_t, busId) == 36);

/// nvmlUtilization_t: percentages over the driver's last sample period.
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
static_assert(sizeof(nvmlUtilization_t) == 8);

/// nvmlEventData_t as filled by nvmlEventSetWait_v2 (the _v2 layout adds the two instance ids).
/// For nvmlEventTypeXidCriticalError, eventData is the Xid (999 for an unknown one).
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
static_assert(sizeof(void*) != 8 ||
              (sizeof(nvmlEventData_t) == 32 && offsetof(nvmlEventData_t, eventData) == 16 &&
               offsetof(nvmlEventData_t, computeInstanceId) == 28));

/// nvmlEventType bits (nvml.h "nvmlEventType").
inline constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x0000000000000008ULL;

/// Clock event (throttle) reason bits (nvml.h "NvmlClocksEventReasons"; the same bits are
/// returned by the deprecated nvmlDeviceGetCurrentClocksThrottleReasons).
inline constexpr unsigned long long nvmlClocksThrottleReasonGpuIdle = 0x0000000000000001ULL;
inline constexpr unsigned long long nvmlClocksThrottleReasonSwPowerCap = 0x0000000000000004ULL;
inline constexpr unsigned long long nvmlClocksThrottleReasonHwSlowdown = 0x0000000000000008ULL;
inline constexpr unsigned long long nvmlClocksThrottleReasonSwThermalSlowdown =
    0x0000000000000020ULL;
inline constexpr unsigned long long nvmlClocksThrottleReasonHwThermalSlowdown =
    0x0000000000000040ULL;
inline constexpr unsigned long long nvmlClocksThrottleReasonHwPowerBrakeSlowdown =
    0x0000000000000080ULL;

/// The NVML entry points the probe calls, one pointer per symbol, named as the symbol minus its
/// "nvml" prefix and version suffix. Pointers marked optional are null when the library lacks
/// the symbol (older drivers); the probe then skips that reading. The table does not own the
/// library; NvmlLibrary does.
struct NvmlApi {
  // Required: a library without these is not NVML.
  nvmlReturn_t (*init)() = nullptr;                           // nvmlInit_v2
  nvmlReturn_t (*shutdown)() = nullptr;                       // nvmlShutdown
  nvmlReturn_t (*device_get_count)(unsigned int*) = nullptr;  // nvmlDeviceGetCount_v2
  nvmlReturn_t (*device_get_handle_by_index)(unsigned int, nvmlDevice_t*) = nullptr;  // ..._v2
  nvmlReturn_t (*device_get_pci_info)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;        // ..._v3
  nvmlReturn_t (*device_get_uuid)(nvmlDevice_t, char*,
                                  unsigned int) = nullptr;  // nvmlDeviceGetUUID

  // Optional.
  const char* (*error_string)(nvmlReturn_t) = nullptr;  // nvmlErrorString
  nvmlReturn_t (*device_get_total_ecc_errors)(nvmlDevice_t, nvmlMemoryErrorType_t,
                                              nvmlEccCounterType_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*device_get_remapped_rows)(nvmlDevice_t, unsigned int* corr_rows,
                                           unsigned int* unc_rows, unsigned int* is_pending,
                                           unsigned int* failure_occurred) = nullptr;
  nvmlReturn_t (*device_get_retired_pages)(nvmlDevice_t, nvmlPageRetirementCause_t,
                                           unsigned int* page_count,
                                           unsigned long long* addresses) = nullptr;
  nvmlReturn_t (*device_get_retired_pages_pending_status)(nvmlDevice_t,
                                                          nvmlEnableState_t*) = nullptr;
  nvmlReturn_t (*device_get_current_clocks_event_reasons)(nvmlDevice_t,
                                                          unsigned long long*) = nullptr;  // R535+
  nvmlReturn_t (*device_get_current_clocks_throttle_reasons)(nvmlDevice_t,
                                                             unsigned long long*) = nullptr;
  nvmlReturn_t (*device_get_curr_pcie_link_generation)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*device_get_max_pcie_link_generation)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*device_get_curr_pcie_link_width)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*device_get_max_pcie_link_width)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*device_get_utilization_rates)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*device_get_power_usage)(nvmlDevice_t, unsigned int* milliwatts) = nullptr;
  nvmlReturn_t (*device_get_enforced_power_limit)(nvmlDevice_t, unsigned int* milliwatts) = nullptr;
  nvmlReturn_t (*event_set_create)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*device_register_events)(nvmlDevice_t, unsigned long long event_types,
                                         nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*event_set_wait)(nvmlEventSet_t, nvmlEventData_t*,
                                 unsigned int timeout_ms) = nullptr;  // _v2
  nvmlReturn_t (*event_set_free)(nvmlEventSet_t) = nullptr;
};

/// The loaded and initialised NVML library: dlopen + nvmlInit_v2 on open, nvmlShutdown + dlclose
/// on destruction. Move-only. NVML itself is thread-safe; this object is not synchronised.
class NvmlLibrary {
 public:
  /// Loads `path` (a name the dynamic loader searches for, or a file path), resolves every entry
  /// of NvmlApi and calls nvmlInit_v2. Errors name the action, the path and the missing symbol
  /// or NVML's own message.
  static Result<NvmlLibrary> open(const std::string& path = "libnvidia-ml.so.1");

  NvmlLibrary(NvmlLibrary&& other) noexcept;
  NvmlLibrary& operator=(NvmlLibrary&& other) noexcept;
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;
  ~NvmlLibrary();

  /// The entry points; valid while this object lives.
  const NvmlApi& api() const { return api_; }
  /// The path it was opened with, for messages.
  const std::string& path() const { return path_; }
  /// NVML's text for `rc` ("GPU is lost"), or "NVML error <rc>" without nvmlErrorString.
  std::string error_string(nvmlReturn_t rc) const;

 private:
  NvmlLibrary(void* handle, NvmlApi api, std::string path);
  void close();

  void* handle_ = nullptr;
  NvmlApi api_;
  std::string path_;
};

}  // namespace cmax::probes::nvml
