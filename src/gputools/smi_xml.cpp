#include "gputools/smi_xml.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <set>

#include "gputools/xml_scan.h"

namespace cmax::gputools {

namespace {

// Where each reading sits below <gpu>, and the --query-gpu field it fills. Rows sharing a field
// are alternatives across DTD versions, tried in order; the first element present wins.
struct XmlField {
  std::string_view path;
  std::string_view field;
};

constexpr XmlField kXmlFields[] = {
    {"product_name", "name"},
    {"product_brand", "product_brand"},
    {"uuid", "uuid"},
    {"serial", "serial"},
    {"pci/pci_bus_id", "pci.bus_id"},
    {"persistence_mode", "persistence_mode"},
    {"mig_mode/current_mig", "mig.mode.current"},
    {"mig_mode/pending_mig", "mig.mode.pending"},
    {"performance_state", "pstate"},
    {"ecc_mode/current_ecc", "ecc.mode.current"},
    {"ecc_mode/pending_ecc", "ecc.mode.pending"},
    {"retired_pages/multiple_single_bit_retirement/retired_count",
     "retired_pages.single_bit_ecc.count"},
    {"retired_pages/double_bit_retirement/retired_count", "retired_pages.double_bit.count"},
    {"remapped_rows/remapped_row_corr", "remapped_rows.correctable"},
    {"remapped_rows/remapped_row_unc", "remapped_rows.uncorrectable"},
    {"remapped_rows/remapped_row_pending", "remapped_rows.pending"},
    {"remapped_rows/remapped_row_failure", "remapped_rows.failure"},
    {"pci/pci_gpu_link_info/pcie_gen/current_link_gen", "pcie.link.gen.current"},
    {"pci/pci_gpu_link_info/pcie_gen/max_link_gen", "pcie.link.gen.max"},
    {"pci/pci_gpu_link_info/link_widths/current_link_width", "pcie.link.width.current"},
    {"pci/pci_gpu_link_info/link_widths/max_link_width", "pcie.link.width.max"},
    {"pci/replay_counter", "pcie.replay_counter"},
    {"utilization/gpu_util", "utilization.gpu"},
    {"temperature/gpu_temp", "temperature.gpu"},
    {"temperature/gpu_temp_slow_threshold", "temperature.slowdown_threshold"},
    {"temperature/gpu_temp_max_threshold", "temperature.shutdown_threshold"},
    {"gpu_power_readings/power_draw", "power.draw"},          // v12
    {"gpu_power_readings/instant_power_draw", "power.draw"},  // v13
    {"gpu_power_readings/average_power_draw", "power.draw"},
    {"power_readings/power_draw", "power.draw"},  // v11 and older
    {"gpu_power_readings/current_power_limit", "enforced.power.limit"},
    {"power_readings/enforced_power_limit", "enforced.power.limit"},
    {"power_readings/power_limit", "enforced.power.limit"},
    {"gpu_recovery_action", "gpu_recovery_action"},
    {"fabric/state", "fabric.state"},
    {"fabric/status", "fabric.status"},
};

// The element at `path`, or else the deepest ancestor on the path that exists with text and no
// children: nvidia-smi prints `<remapped_rows>N/A</remapped_rows>` for a whole unsupported group.
const XmlElement* locate(const XmlElement& gpu, std::string_view path) {
  const XmlElement* at = &gpu;
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    const XmlElement* next = at->child(path.substr(0, slash));
    if (!next) return at != &gpu && at->children.empty() && !at->text.empty() ? at : nullptr;
    at = next;
    path = slash == std::string_view::npos ? std::string_view{} : path.substr(slash + 1);
  }
  return at;
}

// Sums one ECC scope ("volatile" or "aggregate") across the counters this layout has and stores
// the total as ecc.errors.<kind>.<scope>.total. Any counter that cannot be read is recorded
// instead of a partial sum, which would understate the errors.
void sum_ecc(SmiGpu& g, const XmlElement* ecc, std::string_view scope, bool uncorrected) {
  const std::string field =
      fmt::format("ecc.errors.{}.{}.total", uncorrected ? "uncorrected" : "corrected", scope);
  const XmlElement* s = ecc ? ecc->child(scope) : nullptr;
  if (!s) {
    if (ecc && ecc->children.empty() && !ecc->text.empty()) set_smi_field(g, field, ecc->text);
    return;
  }
  std::vector<std::string_view> parts;
  if (uncorrected) {
    // v13 splits SRAM uncorrectable into parity and SECDED; never count both forms.
    if (s->child("sram_uncorrectable"))
      parts = {"sram_uncorrectable", "dram_uncorrectable"};
    else
      parts = {"sram_uncorrectable_parity", "sram_uncorrectable_secded", "dram_uncorrectable"};
    parts.push_back("double_bit/total");  // pre-Ampere layout
  } else {
    parts = {"sram_correctable", "dram_correctable", "single_bit/total"};
  }
  std::uint64_t sum = 0;
  bool any_value = false;
  std::string_view no_value;
  for (auto part : parts) {
    const XmlElement* el = s->find(part);
    if (!el) continue;
    if (const auto state = classify_smi_value(el->text)) {
      if (*state == SmiFieldState::unreadable) {
        set_smi_field(g, field, el->text);
        return;
      }
      if (no_value.empty()) no_value = el->text;
      continue;
    }
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(el->text.data(), el->text.data() + el->text.size(), n);
    if (ec != std::errc() || end != el->text.data() + el->text.size()) {
      set_smi_field(g, field, el->text);  // records it as malformed
      return;
    }
    sum += n;
    any_value = true;
  }
  if (any_value)
    set_smi_field(g, field, fmt::format("{}", sum));
  else if (!no_value.empty())
    set_smi_field(g, field, no_value);
}

// Pending page retirement: nvidia-smi prints `pending_blacklist` and `pending_retirement`; either
// Yes means a reset is needed. Priority: Yes, then unreadable, then a plain value, then N/A.
void retired_pending(SmiGpu& g, const XmlElement& gpu) {
  std::string_view pick;
  int best = 4;
  for (auto path : {"retired_pages/pending_blacklist", "retired_pages/pending_retirement"}) {
    const XmlElement* el = locate(gpu, path);
    if (!el) continue;
    const auto state = classify_smi_value(el->text);
    const int rank = el->text == "Yes"                    ? 0
                     : state == SmiFieldState::unreadable ? 1
                     : !state                             ? 2
                                                          : 3;
    if (rank < best) best = rank, pick = el->text;
  }
  if (best < 4) set_smi_field(g, "retired_pages.pending", pick);
}

void clock_events(SmiGpu& g, const XmlElement& gpu) {
  // R535 renamed "throttle" to "event"; a document has one of the two groups.
  constexpr std::pair<std::string_view, std::string_view> kGroups[] = {
      {"clocks_event_reasons", "clocks_event_reason_"},
      {"clocks_throttle_reasons", "clocks_throttle_reason_"}};
  for (const auto& [group, prefix] : kGroups) {
    const XmlElement* el = gpu.child(group);
    if (!el) continue;
    for (const auto& c : el->children) {
      if (!std::string_view(c.name).starts_with(prefix)) continue;
      const std::string field =
          fmt::format("clocks_event_reasons.{}", std::string_view(c.name).substr(prefix.size()));
      if (!set_smi_field(g, field, c.text)) g.other.emplace(field, c.text);
    }
  }
}

SmiGpu read_gpu(const XmlElement& gpu, int index) {
  SmiGpu g;
  g.index = index;
  std::set<std::string_view> done;
  for (const auto& f : kXmlFields) {
    if (done.count(f.field)) continue;
    const XmlElement* el = locate(gpu, f.path);
    if (!el) continue;
    done.insert(f.field);
    set_smi_field(g, f.field, el->text);
  }
  if (g.bus_id.empty())
    if (auto id = gpu.attribute("id")) g.bus_id = kernel_bus_id(*id);
  const XmlElement* ecc = gpu.child("ecc_errors");
  for (auto scope : {"volatile", "aggregate"}) {
    sum_ecc(g, ecc, scope, true);
    sum_ecc(g, ecc, scope, false);
  }
  retired_pending(g, gpu);
  clock_events(g, gpu);
  return g;
}

}  // namespace

Result<SmiReport> parse_smi_xml(std::string_view text) {
  auto root = parse_xml(text, "parse nvidia-smi -q -x output");
  if (!root)
    return fail("{}; rerun `nvidia-smi -q -x` and check that the output is complete",
                root.error().message);
  if (root->name != "nvidia_smi_log")
    return fail("parse nvidia-smi -q -x output: the root element is <{}>, not <nvidia_smi_log>",
                root->name);
  SmiReport report;
  if (auto* e = root->child("timestamp")) report.timestamp = e->text;
  if (auto* e = root->child("driver_version")) report.driver_version = e->text;
  if (auto* e = root->child("cuda_version")) report.cuda_version = e->text;
  if (auto* e = root->child("attached_gpus")) {
    unsigned n = 0;
    auto [end, ec] = std::from_chars(e->text.data(), e->text.data() + e->text.size(), n);
    if (ec == std::errc() && end == e->text.data() + e->text.size()) report.attached_gpus = n;
  }
  int index = 0;
  for (const auto& c : root->children)
    if (c.name == "gpu") report.gpus.push_back(read_gpu(c, index++));
  return report;
}

}  // namespace cmax::gputools
