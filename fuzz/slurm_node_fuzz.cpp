// libFuzzer target: the parsers of `scontrol -o show node` lines and Slurm state strings.
// Invariants: no crash on any bytes; a parsed node has a name, and its state parses again to the
// same base and flags; the reason never holds a newline.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sched/slurm_parse.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto node = cmax::sched::parse_scontrol_node(in)) {
    check(!node->name.empty());
    check(node->reason.find('\n') == std::string_view::npos);
    auto again = cmax::sched::parse_slurm_state(node->state);
    check(again && again->base == node->base && again->flags == node->flags);
  }
  if (auto nodes = cmax::sched::parse_scontrol_nodes(in))
    for (const auto& n : *nodes) check(!n.name.empty() && n.reason.find('\n') == std::string::npos);
  (void)cmax::sched::parse_slurm_state(in);
  return 0;
}
