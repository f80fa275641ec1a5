#include "probes/probe_set.h"

#include <fmt/format.h>

#include "probes/fs_probe.h"
#include "probes/ib_probe.h"
#include "probes/nvml_api.h"

namespace cmax::probes {

Result<ProbeSet> make_probes(const ProbeConfig& config) {
  ProbeSet set;
  if (config.nvml) {
    auto lib = nvml::NvmlLibrary::open(config.nvml_lib);
    if (lib) {
      set.probes.push_back(std::make_unique<GpuProbe>(std::move(*lib), config.gpu));
    } else if (config.nvml_lib.find('/') != std::string::npos) {
      return Unexpected<Error>{lib.error()};
    } else {
      set.notes.push_back(fmt::format("nvml: off: {}", lib.error().message));
    }
  }
  if (config.ib) {
    auto ib = IbProbe::create(IbOptions{config.ib_root, config.ib_expect});
    if (!ib) return Unexpected<Error>{ib.error()};
    set.probes.push_back(std::make_unique<IbProbe>(std::move(*ib)));
  }
  if (!config.mounts.empty()) {
    auto fs = FsProbe::create(FsOptions{config.mounts, config.mount_timeout});
    if (!fs) return Unexpected<Error>{fs.error()};
    set.probes.push_back(std::make_unique<FsProbe>(std::move(*fs)));
  }
  return set;
}

}  // namespace cmax::probes
