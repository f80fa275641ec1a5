#include "gputools/topo.h"

#include <algorithm>
#include <array>

#include "core/strings.h"

namespace cmax::gputools {

namespace {

// The Legend's names, including "SOC", which drivers before ~384 printed instead of SYS.
constexpr std::array<std::pair<std::string_view, LinkKind>, 8> kKinds{{{"X", LinkKind::self},
                                                                      {"PIX", LinkKind::pix},
                                                                      {"PXB", LinkKind::pxb},
                                                                      {"PHB", LinkKind::phb},
                                                                      {"NODE", LinkKind::node},
                                                                      {"SYS", LinkKind::sys},
                                                                      {"SOC", LinkKind::sys},
                                                                      {"NV", LinkKind::nvlink}}};

// nvidia-smi underlines the header with ESC[4m ... ESC[0m. Pasted into an issue, the ESC byte is
// often lost and "[4m" stays (the B300 sample), so both the byte and the residue go.
std::string strip_ansi(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') continue;
    if (line[i] == '[') {
      std::size_t j = i + 1;
      while (j < line.size() && ((line[j] >= '0' && line[j] <= '9') || line[j] == ';')) ++j;
      if (j > i + 1 && j < line.size() && line[j] == 'm') {
        i = j;
        continue;
      }
    }
    out += line[i];
  }
  return out;
}

// The header's trailing column names contain spaces; rejoin them after splitting on whitespace, so
// tab-, multi-space- and single-space-separated headers all read the same.
std::vector<std::string> header_tokens(std::string_view line) {
  std::vector<std::string> out;
  auto words = core::split_any(line, " \t");
  for (std::size_t i = 0; i < words.size(); ++i) {
    auto next = [&](std::size_t k) { return i + k < words.size() ? words[i + k] : std::string_view{}; };
    if (words[i] == "CPU" && next(1) == "Affinity") {
      out.emplace_back("CPU Affinity");
      i += 1;
    } else if (words[i] == "NUMA" && next(1) == "Affinity") {
      out.emplace_back("NUMA Affinity");
      i += 1;
    } else if (words[i] == "GPU" && next(1) == "NUMA" && next(2) == "ID") {
      out.emplace_back("GPU NUMA ID");
      i += 2;
    } else {
      out.emplace_back(words[i]);
    }
  }
  return out;
}

bool is_trailing_column(std::string_view t) {
  return t == "CPU Affinity" || t == "NUMA Affinity" || t == "GPU NUMA ID";
}

bool has_prefix(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

TopoLink parse_topo_link(std::string_view cell) {
  cell = core::trim(cell);
  if (has_prefix(cell, "NV") && cell.size() > 2) {
    auto n = core::parse_uint(cell.substr(2));
    if (n && *n > 0 && *n < 1000) return {LinkKind::nvlink, static_cast<int>(*n)};
    return {};
  }
  for (const auto& [name, kind] : kKinds)
    if (kind != LinkKind::nvlink && cell == name) return {kind, 0};
  return {};
}

std::string_view link_kind_name(LinkKind k) {
  switch (k) {
    case LinkKind::self: return "X";
    case LinkKind::nvlink: return "NV";
    case LinkKind::pix: return "PIX";
    case LinkKind::pxb: return "PXB";
    case LinkKind::phb: return "PHB";
    case LinkKind::node: return "NODE";
    case LinkKind::sys: return "SYS";
    case LinkKind::unknown: break;
  }
  return "?";
}

std::optional<TopoLink> TopoMatrix::link(std::string_view a, std::string_view b) const {
  auto col = std::find(labels.begin(), labels.end(), b);
  if (col == labels.end()) return std::nullopt;
  const auto index = static_cast<std::size_t>(col - labels.begin());
  for (const auto& r : rows)
    if (r.label == a) return index < r.cells.size() ? std::optional(parse_topo_link(r.cells[index])) : std::nullopt;
  return std::nullopt;
}

std::vector<std::string> TopoMatrix::gpus() const {
  std::vector<std::string> out;
  for (const auto& l : labels)
    if (has_prefix(l, "GPU")) out.push_back(l);
  return out;
}

std::vector<std::string> TopoMatrix::nics() const {
  std::vector<std::string> out;
  for (const auto& l : labels)
    if (!has_prefix(l, "GPU")) out.push_back(l);
  return out;
}

std::string TopoMatrix::nic_device(std::string_view nic) const {
  for (const auto& [label, dev] : nic_legend)
    if (label == nic) return dev;
  return std::string(nic);
}

Result<TopoMatrix> parse_topo_matrix(std::string_view text) {
  TopoMatrix m;
  std::vector<std::string> trailing;  // the header's non-matrix columns, in order
  bool in_header_seen = false, in_matrix = false, in_nic_legend = false;
  for (auto raw : core::split_lines(text)) {
    const std::string line = strip_ansi(raw);
    const auto t = core::trim(line);
    if (!in_header_seen) {
      auto tokens = header_tokens(t);
      if (tokens.empty() || tokens.front() != "GPU0") continue;  // shell prompts, "NVIDIA Topology:" lines
      for (auto& tok : tokens) (is_trailing_column(tok) ? trailing : m.labels).push_back(std::move(tok));
      m.has_cpu_affinity = std::count(trailing.begin(), trailing.end(), "CPU Affinity") > 0;
      m.has_numa_affinity = std::count(trailing.begin(), trailing.end(), "NUMA Affinity") > 0;
      m.has_gpu_numa_id = std::count(trailing.begin(), trailing.end(), "GPU NUMA ID") > 0;
      in_header_seen = in_matrix = true;
      continue;
    }
    if (t.empty()) {
      in_matrix = false;
      continue;
    }
    if (t == "NIC Legend:") {
      in_nic_legend = true;
      continue;
    }
    if (in_nic_legend) {
      auto kv = core::parse_key_value(t, ':');
      if (kv && has_prefix(kv->key, "NIC")) m.nic_legend.emplace_back(std::string(kv->key), std::string(kv->value));
      continue;
    }
    if (!in_matrix) continue;  // the Legend block
    // Cells never contain spaces, so whitespace splitting also drops the empty tab cells that
    // nvidia-smi prints after NUMA Affinity and at the end of NIC rows.
    auto words = core::split_any(t, " \t");
    if (std::find(m.labels.begin(), m.labels.end(), words.front()) == m.labels.end()) {
      m.errors.push_back("not a matrix row: " + core::clip(t, 120));
      continue;
    }
    TopoRow row;
    row.label = std::string(words.front());
    std::size_t i = 1;
    for (; i < words.size() && row.cells.size() < m.labels.size(); ++i) row.cells.emplace_back(words[i]);
    for (std::size_t k = 0; i < words.size() && k < trailing.size(); ++i, ++k) {
      if (trailing[k] == "CPU Affinity") row.cpu_affinity = std::string(words[i]);
      if (trailing[k] == "NUMA Affinity") row.numa_affinity = std::string(words[i]);
      if (trailing[k] == "GPU NUMA ID") row.gpu_numa_id = std::string(words[i]);
    }
    if (i < words.size()) m.errors.push_back("row " + row.label + " has extra cells: " + core::clip(t, 120));
    m.rows.push_back(std::move(row));
  }
  if (!in_header_seen)
    return fail("read nvidia-smi topo -m output: no header line starting with GPU0; pass the output of "
                "`nvidia-smi topo -m` unchanged");
  return m;
}

}  // namespace cmax::gputools
