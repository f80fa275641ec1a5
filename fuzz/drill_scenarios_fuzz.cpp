// libFuzzer target: drill scenario files (parse_scenarios) and template rendering. Invariants: a
// scenario that parses renders with the default targets (the template limits leave room for them)
// into non-empty lines of printable ASCII no longer than kMaxLineBytes, with the same steps, delays
// and levels; the input as one template, rendered with targets built from its own bytes, either
// fails or gives one such line; a failure is an error with a message, never a crash.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "drill/scenario.h"

namespace {

using namespace cmax::drill;

void check(bool ok) {
  if (!ok) std::abort();
}

void check_line(std::string_view line) {
  check(!line.empty());
  check(line.size() <= kMaxLineBytes);
  for (char c : line) check(c >= 0x20 && c < 0x7f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);

  auto scenarios = parse_scenarios(input, "fuzz");
  if (!scenarios) {
    check(!scenarios.error().message.empty());
  } else {
    check(!scenarios->empty());
    for (const Scenario& s : *scenarios) {
      check(find_scenario(*scenarios, s.id) == &s);
      auto steps = render(s, Targets{});
      check(static_cast<bool>(steps));
      check(steps->size() == s.steps.size());
      for (std::size_t i = 0; i < steps->size(); ++i) {
        check((*steps)[i].after_ms == s.steps[i].after_ms && (*steps)[i].level == s.steps[i].level);
        check_line((*steps)[i].line);
      }
    }
  }

  // The input as a template, with target values cut from its first bytes: values that hold control
  // characters, spaces or braces must be refused, not written.
  Targets t;
  if (size >= 8) {
    t.drill_id = std::string(input.substr(0, 4));
    t.server = std::string(input.substr(4, 4));
  }
  auto line = render_line(input, t);
  if (line)
    check_line(*line);
  else
    check(!line.error().message.empty());
  return 0;
}
