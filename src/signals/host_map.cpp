#include "signals/host_map.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "signals/classify.h"

namespace cmax::signals {

std::string rdma_device_pci(std::string_view name, const std::string& sys_root) {
  if (name.empty() || name.find('/') != std::string_view::npos || name == "." || name == "..") return {};
  std::error_code ec;
  auto target = std::filesystem::read_symlink(std::filesystem::path(sys_root) / "class" / "infiniband" /
                                                  std::string(name) / "device",
                                              ec);
  if (ec) return {};
  std::string pci = target.filename().string();
  return is_pci(pci) ? pci : std::string();
}

int nvidia_driver_branch(const std::string& proc_root) {
  std::ifstream in(proc_root + "/driver/nvidia/version");
  if (!in) return -1;
  std::string line;
  std::getline(in, line);
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build ..."
  std::istringstream words(line);
  std::string w;
  while (words >> w) {
    auto dot = w.find('.');
    if (dot == 3 && w.size() > 4 && std::isdigit(static_cast<unsigned char>(w[0])) &&
        std::isdigit(static_cast<unsigned char>(w[1])) && std::isdigit(static_cast<unsigned char>(w[2])))
      return std::stoi(w.substr(0, 3));
  }
  return -1;
}

}  // namespace cmax::signals
