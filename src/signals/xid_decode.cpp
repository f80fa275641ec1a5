#include "signals/xid_decode.h"

#include <algorithm>
#include <bit>
#include <limits>

#include <fmt/format.h>

#include "core/strings.h"
#include "signals/csv.h"

namespace cmax::signals {

extern const char kXidNvlinkDecodeCsv[];  // generated from data/xid_nvlink_decode.csv
extern const char kXid74DecodeCsv[];      // generated from data/xid74_decode.csv

namespace {

// The sheets' numbers, through core's parsers: a 32-bit register ("0x00000001") and a small integer.
std::optional<std::uint32_t> hex32(std::string_view s) {
  auto v = core::parse_uint(s, 16);
  if (!v || *v > std::numeric_limits<std::uint32_t>::max()) return std::nullopt;
  return static_cast<std::uint32_t>(*v);
}

std::optional<int> integer(std::string_view s) {
  auto v = core::parse_int(s);
  if (!v || *v < std::numeric_limits<int>::min() || *v > std::numeric_limits<int>::max()) return std::nullopt;
  return static_cast<int>(*v);
}

// The sheet's immediate actions on cmax's scale. XID_154_EVAL: the Xid 154 the driver prints next
// carries the recovery action, which decides (its own incident, folded into the GPU's).
Action sheet_action(std::string_view immediate) {
  if (immediate == "RESET_GPU") return Action::reset_gpu;
  if (immediate == "IGNORE") return Action::monitor;
  if (immediate == "XID_154_EVAL") return Action::monitor;
  return Action::drain;  // an action newer than this table: keep work off the GPU
}

bool fatal_row(std::string_view severity) {
  return severity.find("atal") != std::string_view::npos && severity.find("Non") == std::string_view::npos;
}

}  // namespace

Result<XidDecoder> XidDecoder::builtin() { return from_csv(kXidNvlinkDecodeCsv, kXid74DecodeCsv); }

Result<XidDecoder> XidDecoder::from_csv(std::string_view nvlink_csv, std::string_view xid74_csv) {
  XidDecoder d;
  auto nv = parse_csv(nvlink_csv);
  if (!nv) return fail("read the Xid 144-150 decode sheet: {}", nv.error().message);
  for (std::size_t i = 1; i < nv->size(); ++i) {
    const auto& f = (*nv)[i].fields;
    if (f.size() < 9) return fail("read the Xid 144-150 decode sheet: line {} has {} fields, want 9", (*nv)[i].line, f.size());
    NvlinkRow r;
    auto xid = integer(f[0]);
    if (!xid || (f[1] != "V1" && f[1] != "V2") || f[3].size() > 32)
      return fail("read the Xid 144-150 decode sheet: line {}: bad xid, version or mask", (*nv)[i].line);
    r.xid = *xid;
    r.version = f[1] == "V1" ? 1 : 2;
    r.subcode = f[2];
    // The mask is written MSB first; its last character is bit 0. '-' leaves a bit free.
    for (std::size_t k = 0; k < f[3].size(); ++k) {
      char c = f[3][f[3].size() - 1 - k];
      if (c == '-') continue;
      if (c != '0' && c != '1') return fail("read the Xid 144-150 decode sheet: line {}: mask '{}'", (*nv)[i].line, f[3]);
      r.care |= 1u << k;
      if (c == '1') r.value |= 1u << k;
    }
    for (std::string_view rest = f[4]; !rest.empty();) {
      auto slash = rest.find('/');
      auto v = hex32(rest.substr(0, slash));
      if (!v) return fail("read the Xid 144-150 decode sheet: line {}: error status '{}'", (*nv)[i].line, f[4]);
      r.error_status.push_back(*v);
      rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
    }
    r.severity = f[5];
    r.immediate = f[6];
    r.investigatory = f[7];
    r.sheet_row = integer(f[8]).value_or(0);
    d.nvlink_.push_back(std::move(r));
  }
  auto x74 = parse_csv(xid74_csv);
  if (!x74) return fail("read the Xid 74 decode: {}", x74.error().message);
  for (std::size_t i = 1; i < x74->size(); ++i) {
    const auto& f = (*x74)[i].fields;
    if (f.size() < 5) return fail("read the Xid 74 decode: line {} has {} fields, want 6", (*x74)[i].line, f.size());
    Xid74Row r;
    auto reg = integer(f[0]);
    auto mask = hex32(f[2]);
    auto action = parse_action(f[3]);
    if (!reg || *reg < 0 || *reg > 6 || !mask || !action)
      return fail("read the Xid 74 decode: line {}: bad register, mask or action", (*x74)[i].line);
    r.reg = *reg;
    r.mask = *mask;
    r.action = *action;
    r.meaning = f[4];
    d.xid74_.push_back(std::move(r));
  }
  return d;
}

std::optional<XidDecoded> XidDecoder::decode(const Signal& s) const {
  if (s.kind != Kind::xid) return std::nullopt;
  if (s.code >= 144 && s.code <= 150) return decode_nvlink(s);
  if (s.code == 74) return decode_xid74(s);
  return std::nullopt;
}

std::optional<XidDecoded> XidDecoder::decode_nvlink(const Signal& s) const {
  if (s.nregs < 2) return std::nullopt;
  const std::uint32_t intr = s.regs[0], status = s.regs[1];
  // The most specific row (most fixed bits) of each generation that matches.
  auto best = [&](int version) -> const NvlinkRow* {
    const NvlinkRow* pick = nullptr;
    for (const auto& r : nvlink_) {
      if (r.xid != s.code || r.version != version || (intr & r.care) != r.value) continue;
      if (!r.error_status.empty() && std::find(r.error_status.begin(), r.error_status.end(), status) == r.error_status.end())
        continue;
      if (!pick || std::popcount(r.care) > std::popcount(pick->care)) pick = &r;
    }
    return pick;
  };
  const bool v2_known = s.driver_branch >= 575, v1_known = s.driver_branch > 0 && s.driver_branch < 575;
  const NvlinkRow* v1 = v2_known ? nullptr : best(1);
  const NvlinkRow* v2 = v1_known ? nullptr : best(2);
  if (!v1 && !v2) return std::nullopt;
  auto decide = [&](const NvlinkRow& r) {
    XidDecoded d;
    d.action = sheet_action(r.immediate);
    d.reason = fmt::format("Xid {} decode {} row {}: {} {} (IntrInfo 0x{:08x}, ErrorStatus 0x{:08x}): {}", s.code,
                           r.version == 1 ? "V1 (before R575)" : "V2 (R575 on)", r.sheet_row, r.subcode, r.severity,
                           intr, status, r.immediate);
    // The line's own word: a Fatal instance of a row the sheet marks non-fatal (a promotable
    // error, '*') takes the sheet's Action 2, a GPU reset.
    if (s.fatal && !fatal_row(r.severity) && d.action < Action::reset_gpu) {
      d.action = Action::reset_gpu;
      d.reason += "; the line says Fatal: promoted to RESET_GPU";
    }
    return d;
  };
  if (v1 && v2) {
    XidDecoded a = decide(*v1), b = decide(*v2);
    XidDecoded& strong = a.action >= b.action ? a : b;
    if (a.action != b.action)
      strong.reason += fmt::format("; driver branch unknown: the other generation's row says {}",
                                   to_string(a.action >= b.action ? b.action : a.action));
    return strong;
  }
  XidDecoded d = decide(v1 ? *v1 : *v2);
  if (s.driver_branch <= 0) d.reason += "; driver branch unknown: only this generation's sheet has a row for it";
  else d.reason += fmt::format("; driver branch R{}", s.driver_branch);
  return d;
}

std::optional<XidDecoded> XidDecoder::decode_xid74(const Signal& s) const {
  if (s.nregs < 5) return std::nullopt;
  XidDecoded d;
  std::string bits;
  bool any = false;
  for (int reg : {0, 2, 3, 4}) {
    std::uint32_t v = s.regs[static_cast<std::size_t>(reg)];
    for (int bit = 0; bit < 32; ++bit) {
      if (!(v >> bit & 1)) continue;
      any = true;
      const Xid74Row* row = nullptr;
      for (const auto& r : xid74_)
        if (r.reg == reg && r.mask == (1u << bit)) row = &r;
      Action a = row ? row->action : Action::drain;  // a bit NVIDIA does not list: "report a bug"
      std::string what = row ? row->meaning : std::string("a bit NVIDIA does not list (report a bug)");
      if (a > d.action || bits.empty()) {
        if (a > d.action) d.action = a;
      }
      bits += fmt::format("{}register {} bit {}: {} -> {}", bits.empty() ? "" : "; ", reg, bit, what, to_string(a));
    }
  }
  if (!any) return std::nullopt;
  d.reason = fmt::format("Xid 74 decode: {}", bits);
  return d;
}

}  // namespace cmax::signals
