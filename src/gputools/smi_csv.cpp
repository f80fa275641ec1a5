#include "gputools/smi_csv.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>

namespace cmax::gputools {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// What may follow a number: nothing, a unit after a space ("81559 MiB", "38 C", "100 %"), or
// the "x" of a link width ("16x").
bool unit_suffix(std::string_view rest) {
  return rest.empty() || rest.front() == ' ' || rest == "x";
}

std::optional<std::uint64_t> parse_u64(std::string_view v) {
  std::uint64_t out = 0;
  if (v.starts_with("0x") || v.starts_with("0X")) {  // bitmasks: clocks_event_reasons.active
    v.remove_prefix(2);
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out, 16);
    if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
    return out;
  }
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || !unit_suffix(std::string_view(end, v.data() + v.size() - end)))
    return std::nullopt;
  return out;
}

std::optional<double> parse_double(std::string_view v) {
  double out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || !unit_suffix(std::string_view(end, v.data() + v.size() - end)))
    return std::nullopt;
  return out;
}

std::optional<bool> parse_bool(std::string_view v) {
  if (v == "Enabled" || v == "Yes" || v == "Active" || v == "True" || v == "1") return true;
  if (v == "Disabled" || v == "No" || v == "Not Active" || v == "False" || v == "0") return false;
  return std::nullopt;
}

using Setter = bool (*)(SmiGpu&, std::string_view);

template <std::string SmiGpu::* M>
bool str(SmiGpu& g, std::string_view v) {
  g.*M = std::string(v);
  return true;
}
template <std::optional<bool> SmiGpu::* M>
bool flag(SmiGpu& g, std::string_view v) {
  g.*M = parse_bool(v);
  return (g.*M).has_value();
}
template <std::optional<std::uint64_t> SmiGpu::* M>
bool count(SmiGpu& g, std::string_view v) {
  g.*M = parse_u64(v);
  return (g.*M).has_value();
}
template <std::optional<unsigned> SmiGpu::* M>
bool small(SmiGpu& g, std::string_view v) {
  auto x = parse_u64(v);
  if (!x || *x > 0xFFFFFFFFu) return false;
  g.*M = static_cast<unsigned>(*x);
  return true;
}
template <std::optional<double> SmiGpu::* M>
bool real(SmiGpu& g, std::string_view v) {
  g.*M = parse_double(v);
  return (g.*M).has_value();
}
bool bus(SmiGpu& g, std::string_view v) {
  g.bus_id = kernel_bus_id(v);
  return true;
}
bool index(SmiGpu& g, std::string_view v) {
  auto x = parse_u64(v);
  if (!x || *x > 1u << 20) return false;
  g.index = static_cast<int>(*x);
  return true;
}

struct FieldRule {
  std::string_view name;
  Setter set;
};

// The --query-gpu fields a health judge reads (names from `nvidia-smi --help-query-gpu`), plus
// the readings only `-q -x` prints, named in the same style.
constexpr FieldRule kFields[] = {
    {"name", str<&SmiGpu::product_name>},
    {"product_brand", str<&SmiGpu::product_brand>},
    {"uuid", str<&SmiGpu::uuid>},
    {"serial", str<&SmiGpu::serial>},
    {"pci.bus_id", bus},
    {"index", index},
    {"pstate", str<&SmiGpu::pstate>},
    {"persistence_mode", flag<&SmiGpu::persistence_mode>},
    {"mig.mode.current", flag<&SmiGpu::mig_enabled>},
    {"mig.mode.pending", flag<&SmiGpu::mig_pending>},
    {"ecc.mode.current", flag<&SmiGpu::ecc_enabled>},
    {"ecc.mode.pending", flag<&SmiGpu::ecc_pending>},
    {"ecc.errors.uncorrected.volatile.total", count<&SmiGpu::ecc_volatile_uncorrected>},
    {"ecc.errors.corrected.volatile.total", count<&SmiGpu::ecc_volatile_corrected>},
    {"ecc.errors.uncorrected.aggregate.total", count<&SmiGpu::ecc_aggregate_uncorrected>},
    {"ecc.errors.corrected.aggregate.total", count<&SmiGpu::ecc_aggregate_corrected>},
    {"retired_pages.single_bit_ecc.count", count<&SmiGpu::retired_sbe_pages>},
    {"retired_pages.sbe", count<&SmiGpu::retired_sbe_pages>},
    {"retired_pages.double_bit.count", count<&SmiGpu::retired_dbe_pages>},
    {"retired_pages.dbe", count<&SmiGpu::retired_dbe_pages>},
    {"retired_pages.pending", flag<&SmiGpu::retired_pending>},
    {"remapped_rows.correctable", count<&SmiGpu::remapped_correctable>},
    {"remapped_rows.uncorrectable", count<&SmiGpu::remapped_uncorrectable>},
    {"remapped_rows.pending", flag<&SmiGpu::remap_pending>},
    {"remapped_rows.failure", flag<&SmiGpu::remap_failure>},
    {"pcie.link.gen.current", small<&SmiGpu::pcie_gen>},
    {"pcie.link.gen.max", small<&SmiGpu::pcie_gen_max>},
    {"pcie.link.width.current", small<&SmiGpu::pcie_width>},
    {"pcie.link.width.max", small<&SmiGpu::pcie_width_max>},
    {"pcie.replay_counter", count<&SmiGpu::pcie_replay_counter>},
    {"utilization.gpu", small<&SmiGpu::utilization_gpu_percent>},
    {"temperature.gpu", real<&SmiGpu::temperature_c>},
    {"temperature.slowdown_threshold", real<&SmiGpu::temperature_slowdown_c>},
    {"temperature.shutdown_threshold", real<&SmiGpu::temperature_shutdown_c>},
    {"power.draw", real<&SmiGpu::power_draw_w>},
    {"power.limit", real<&SmiGpu::power_limit_w>},
    {"enforced.power.limit", real<&SmiGpu::power_limit_w>},  // after power.limit in query order
    {"gpu_recovery_action", str<&SmiGpu::recovery_action>},
    {"fabric.state", str<&SmiGpu::fabric_state>},
    {"fabric.status", str<&SmiGpu::fabric_status>},
};

// "clocks_event_reasons.hw_slowdown" and the pre-535 "clocks_throttle_reasons.hw_slowdown" name
// the same reading; "<prefix>.active" is the NVML bitmask of all of them. Returns the reason
// ("active" or a kClockEvents name) of a field this library maps, else nullopt.
std::optional<std::string_view> clock_reason(std::string_view field) {
  for (std::string_view prefix : {"clocks_event_reasons.", "clocks_throttle_reasons."}) {
    if (!field.starts_with(prefix)) continue;
    std::string_view reason = field.substr(prefix.size());
    if (reason == "display_clock_setting") reason = "display_clocks_setting";
    if (reason == "active") return reason;
    for (const auto& e : kClockEvents)
      if (e.name == reason) return e.name;
  }
  return std::nullopt;
}

bool set_clock_event(SmiGpu& g, std::string_view reason, std::string_view v) {
  if (reason == "active") {
    g.clock_events_active = parse_u64(v);
    if (!g.clock_events_active) return false;
    // Individual columns, where also queried, agree with the mask; fill in those not given.
    for (const auto& e : kClockEvents) {
      auto& slot = g.clock_events[static_cast<std::size_t>(e.event)];
      if (!slot) slot = (*g.clock_events_active & e.bit) != 0;
    }
    return true;
  }
  for (const auto& e : kClockEvents) {
    if (e.name != reason) continue;
    auto b = parse_bool(v);
    if (b) g.clock_events[static_cast<std::size_t>(e.event)] = b;
    return b.has_value();
  }
  return false;
}

// Splits one CSV line into trimmed cells. nvidia-smi does not quote: it joins values with ", ".
std::vector<std::string_view> cells(std::string_view line) {
  std::vector<std::string_view> out;
  while (true) {
    const std::size_t comma = line.find(',');
    out.push_back(trim(line.substr(0, comma)));
    if (comma == std::string_view::npos) return out;
    line.remove_prefix(comma + 1);
  }
}

// "memory.used [MiB]" -> "memory.used".
std::string_view field_name(std::string_view column) {
  const std::size_t bracket = column.find(" [");
  return trim(column.substr(0, bracket));
}

bool is_field_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.'))
      return false;
  return true;
}

Result<SmiReport> parse_rows(std::string_view text, const std::vector<std::string>& fields,
                             std::size_t line_no) {
  SmiReport report;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    if (line.empty()) continue;
    const auto values = cells(line);
    if (values.size() != fields.size())
      return fail(
          "parse nvidia-smi CSV: line {} has {} values for {} fields; check the --query-gpu list",
          line_no, values.size(), fields.size());
    SmiGpu gpu;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      const std::string& f = fields[i];
      const std::string_view v = values[i];
      if (f == "timestamp" || f == "driver_version" || f == "count") {
        if (!report.gpus.empty()) continue;
        if (f == "timestamp")
          report.timestamp = std::string(v);
        else if (f == "driver_version")
          report.driver_version = std::string(v);
        else if (auto n = parse_u64(v); n && *n < 1u << 20)
          report.attached_gpus = static_cast<unsigned>(*n);
        continue;
      }
      if (!set_smi_field(gpu, f, v)) gpu.other.emplace(f, std::string(v));
    }
    report.gpus.push_back(std::move(gpu));
  }
  return report;
}

}  // namespace

std::optional<SmiFieldState> classify_smi_value(std::string_view text) {
  std::string_view t = trim(text);
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
  if (t.empty() || t == "N/A") return SmiFieldState::not_available;
  if (t == "Not Supported" || t == "Requested functionality has been deprecated")
    return SmiFieldState::not_supported;
  if (t == "Insufficient Permissions") return SmiFieldState::no_permission;
  // How nvidia-smi prints a reading the driver failed to return (NVML_ERROR_UNKNOWN and friends).
  if (t == "Unknown Error" || t == "ERR!" || t == "GPU is lost" || t == "GPU requires reset")
    return SmiFieldState::unreadable;
  return std::nullopt;
}

std::string kernel_bus_id(std::string_view smi_bus_id) {
  std::string low(trim(smi_bus_id));
  for (char& c : low) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  const std::size_t first = low.find(':');
  if (first == std::string::npos) return low;
  if (low.find(':', first + 1) == std::string::npos) return "0000:" + low;  // "07:00.0": no domain
  unsigned long domain = 0;
  auto [end, ec] = std::from_chars(low.data(), low.data() + first, domain, 16);
  if (first == 0 || ec != std::errc() || end != low.data() + first) return low;
  return fmt::format("{:04x}{}", domain, low.substr(first));
}

bool set_smi_field(SmiGpu& gpu, std::string_view field, std::string_view text) {
  const std::string_view v = trim(text);
  const auto state = classify_smi_value(v);
  auto note = [&](SmiFieldState s) {
    gpu.issues.push_back({std::string(field), s, std::string(v)});
  };
  const FieldRule* rule = nullptr;
  for (const auto& r : kFields)
    if (r.name == field) rule = &r;
  const auto reason = rule ? std::nullopt : clock_reason(field);
  if (!rule && !reason) {
    // Unmapped, but a reading the driver could not return is a fault sign wherever it appears.
    if (state == SmiFieldState::unreadable) note(*state);
    return false;
  }
  if (state) {
    note(*state);
  } else if (!(rule ? rule->set(gpu, v) : set_clock_event(gpu, *reason, v))) {
    note(SmiFieldState::malformed);
  }
  return true;
}

std::vector<std::string> split_query_fields(std::string_view query) {
  std::vector<std::string> out;
  for (auto c : cells(query))
    if (!c.empty()) out.emplace_back(field_name(c));
  return out;
}

Result<SmiReport> parse_smi_csv(std::string_view text) {
  if (trim(text).empty())
    return fail("parse nvidia-smi CSV: empty output; check that nvidia-smi ran");
  const std::size_t nl = text.find('\n');
  std::vector<std::string> fields;
  std::size_t column = 0;
  for (auto c : cells(text.substr(0, nl))) {
    ++column;
    const std::string_view name = field_name(c);
    if (!is_field_name(name))
      return fail(
          "parse nvidia-smi CSV header: column {} '{}' is not a field name; for noheader output "
          "pass the "
          "--query-gpu field list",
          column, c.substr(0, 60));
    fields.emplace_back(name);
  }
  return parse_rows(nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1), fields,
                    1);
}

Result<SmiReport> parse_smi_csv_noheader(std::string_view text,
                                         const std::vector<std::string>& fields) {
  if (fields.empty()) return fail("parse nvidia-smi CSV: no field list given for noheader output");
  std::vector<std::string> names;
  for (const auto& f : fields) names.emplace_back(field_name(f));
  if (trim(text).empty())
    return fail("parse nvidia-smi CSV: empty output; check that nvidia-smi ran");
  return parse_rows(text, names, 0);
}

}  // namespace cmax::gputools
