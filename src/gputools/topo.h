#pragma once
// `nvidia-smi topo -m` as a value: the GPU/NIC connection matrix, the affinity columns and the NIC
// legend. Pure: text in, value out. The judgement lives in health/gpu_tools_judge.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::gputools {

/// How two devices connect, as the topo Legend names it (best first for NIC locality).
enum class LinkKind { self, nvlink, pix, pxb, phb, node, sys, unknown };

/// One matrix cell read: "NV18" -> {nvlink, 18}; "SYS" -> {sys, 0}; "SOC" (old name) -> sys.
struct TopoLink {
  LinkKind kind = LinkKind::unknown;
  int nvlinks = 0;  ///< the bonded link count of an NV<n> cell, else 0
};

/// Reads one cell ("X", "NV12", "PIX", ...); anything else is LinkKind::unknown.
TopoLink parse_topo_link(std::string_view cell);
/// "NV", "PIX", "SYS", ... for messages.
std::string_view link_kind_name(LinkKind k);

struct TopoRow {
  std::string label;               ///< "GPU0", "NIC3"
  std::vector<std::string> cells;  ///< one per TopoMatrix::labels column; may be shorter (cut rows)
  std::string cpu_affinity;        ///< "0-63,128-191"; empty where the row has none (NIC rows)
  std::string numa_affinity;       ///< "0"
  std::string gpu_numa_id;         ///< "N/A"
};

struct TopoMatrix {
  std::vector<std::string> labels;  ///< column labels in order: "GPU0".."GPU7", "NIC0"..
  bool has_cpu_affinity = false, has_numa_affinity = false, has_gpu_numa_id = false;
  std::vector<TopoRow> rows;
  std::vector<std::pair<std::string, std::string>> nic_legend;  ///< {"NIC0", "mlx5_0"}
  std::vector<std::string> errors;  ///< lines that could not be read; the value is partial

  /// The cell of row `a` in column `b`, or nullopt when either is absent or the row is cut short.
  std::optional<TopoLink> link(std::string_view a, std::string_view b) const;
  /// Labels starting with "GPU" (or "NIC"), in column order.
  std::vector<std::string> gpus() const;
  std::vector<std::string> nics() const;
  /// The NIC legend's device name for "NIC3", or the label itself when there is no legend entry.
  std::string nic_device(std::string_view nic) const;
};

/// Parses `nvidia-smi topo -m` (tab or space separated; ESC sequences and their "[4m" residue
/// stripped; rows without trailing cells tolerated). Errors when no header with GPU columns is found.
Result<TopoMatrix> parse_topo_matrix(std::string_view text);

}  // namespace cmax::gputools
