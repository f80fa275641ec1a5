// libFuzzer target: the parsers of InfiniBand sysfs port files (state, phys_state: "4: ACTIVE";
// counters: "3"). Invariants: no crash on any bytes; a parsed name is non-empty and lies inside
// the input; a parsed counter printed back parses to the same value.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "probes/ib_probe.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto v = cmax::probes::parse_ib_numbered_name(in)) {
    check(!v->name.empty());
    check(v->name.data() >= in.data() && v->name.data() + v->name.size() <= in.data() + in.size());
  }
  if (auto c = cmax::probes::parse_ib_counter(in)) {
    auto again = cmax::probes::parse_ib_counter(std::to_string(*c));
    check(again && *again == *c);
  }
  return 0;
}
