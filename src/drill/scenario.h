#pragma once
// Fault-drill scenarios as data (data/drills.json, schema cmax.drill-scenarios/1, embedded at
// build time): the kernel lines a failing GPU or node prints, in order, with the delay before each
// and its kernel log level, and the action cmax's signal engine must reach on them. Templates name
// the machine's devices through placeholders ({gpu}, {bridge}, {comm}...; docs/drills.md) that
// render() fills from Targets. Pure: no I/O, no clock.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "signals/signal.h"

namespace cmax::drill {

/// The longest template a scenario may hold, in bytes. Chosen so that every placeholder filled with
/// its default value still fits in kMaxLineBytes.
inline constexpr std::size_t kMaxTemplateBytes = 400;
/// The longest rendered line, in bytes: what the kernel keeps of one printk record (LOG_LINE_MAX).
inline constexpr std::size_t kMaxLineBytes = 976;
/// The most steps in one scenario, and the longest delay before one step (10 minutes).
inline constexpr std::size_t kMaxSteps = 64;
inline constexpr int kMaxAfterMs = 600000;
/// The longest process name the kernel keeps (TASK_COMM_LEN - 1).
inline constexpr std::size_t kMaxCommChars = 15;

/// One kernel line of a scenario. In a Scenario `line` is a template; render() returns the same
/// struct with the line filled in.
struct Step {
  int after_ms = 0;  ///< delay after the previous step (after the drill's start for the first)
  int level = 0;     ///< kernel log level 0 (emerg) .. 7 (debug), as the real driver logs the line
  std::string line;
};

/// One drill: what it simulates and what cmax must conclude from it.
struct Scenario {
  std::string id;                      ///< "xid79": lower-case letters, digits and '-'
  std::string title;                   ///< what it simulates, for people
  std::vector<std::string> platforms;  ///< "hgx", "nvl72": where the fault can happen
  signals::Action expect = signals::Action::monitor;  ///< strongest action over its incidents
  std::vector<Step> steps;                            ///< at least one; lines are templates
};

/// Placeholder values. The defaults describe a plausible HGX node; every value is checked by
/// render() (validate_targets) before it reaches a kernel line.
struct Targets {
  std::string gpu = "0000:3b:00.0";  ///< the GPU's PCI function; {gpu} drops ".0" as Xid lines do
  std::string bridge = "0000:3a:00.0";    ///< {bridge}: the port above the GPU
  std::string nvswitch = "0000:c3:00.0";  ///< {nvswitch}: an NVSwitch's PCI function
  std::string ib = "mlx5_0";              ///< {ib}: an InfiniBand device
  std::string ib_fn = "0000:1a:00.0";     ///< {ib_fn}: that HCA's PCI function
  std::string netdev = "ib0";             ///< {netdev}: its network interface
  int cpu = 12;                           ///< {cpu}
  std::string server = "nfs01";           ///< {server}: an NFS server as the mount names it
  std::string drill_id = "0000";          ///< names this run; {comm} is "cmaxdrill-" + drill_id
  std::string comm;                       ///< {comm} when not empty, else from drill_id
  int pid = 4321;                         ///< {pid}
};

/// The placeholder names a template may use, without braces, in the order docs/drills.md lists
/// them.
std::span<const std::string_view> placeholder_names();

/// Parses a scenario file. Errors name `origin`, the scenario (by id once known, else by index),
/// the step index and key, and what is wrong: not JSON, wrong schema, unknown key, bad id,
/// duplicate id, unknown platform, unknown action, empty steps, level out of range, bad delay,
/// unknown placeholder or unbalanced brace in a line.
Result<std::vector<Scenario>> parse_scenarios(std::string_view json, std::string_view origin);

/// The scenarios embedded from data/drills.json. Fails only if that file is damaged.
Result<std::vector<Scenario>> builtin_scenarios();

/// The scenario with this id, or nullptr. The pointer is into `scenarios`.
const Scenario* find_scenario(const std::vector<Scenario>& scenarios, std::string_view id);

/// Checks every Targets value: PCI addresses must be DDDD:BB:SS.F, names and the server printable
/// without spaces or the characters a detector splits fields on, {comm} at most kMaxCommChars, no
/// value may hold a newline or another control character.
Result<void> validate_targets(const Targets& targets);

/// One template filled in: {name} is replaced, {{ and }} are literal braces. Fails on a template a
/// scenario could not hold (empty, too long, not printable ASCII, unknown placeholder, unbalanced
/// brace), on invalid targets, or on a result longer than kMaxLineBytes.
Result<std::string> render_line(std::string_view line_template, const Targets& targets);

/// The scenario's steps with every line filled in, in order. Errors name the scenario and step.
Result<std::vector<Step>> render(const Scenario& scenario, const Targets& targets);

}  // namespace cmax::drill
