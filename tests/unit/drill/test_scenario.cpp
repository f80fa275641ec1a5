// Drill scenarios: the built-in file parses, every scenario renders, and every rendered line goes
// through the real signal engine (prefix parser, classifier, correlator with the built-in catalog)
// to exactly the action the scenario expects. That is the proof that a drill writes what detectors
// key on. Then the parser's errors, placeholder escaping and the checks on target values.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "drill/scenario.h"
#include "signals/catalog.h"
#include "signals/classify.h"
#include "signals/correlate.h"
#include "signals/prefix.h"

using cmax::drill::builtin_scenarios;
using cmax::drill::find_scenario;
using cmax::drill::kMaxLineBytes;
using cmax::drill::parse_scenarios;
using cmax::drill::placeholder_names;
using cmax::drill::render;
using cmax::drill::render_line;
using cmax::drill::Scenario;
using cmax::drill::Step;
using cmax::drill::Targets;
using cmax::drill::validate_targets;
using cmax::signals::Action;
using cmax::signals::Incident;
using cmax::signals::Kind;

namespace {

const cmax::signals::Catalog& catalog() {
  static const cmax::signals::Catalog c = [] {
    auto r = cmax::signals::Catalog::builtin();
    EXPECT_TRUE(r) << r.error().message;
    return std::move(r).value();
  }();
  return c;
}

std::vector<Scenario> builtins() {
  auto r = builtin_scenarios();
  EXPECT_TRUE(r) << r.error().message;
  return r ? std::move(r).value() : std::vector<Scenario>{};
}

struct EngineRun {
  std::vector<Incident> incidents;
  std::size_t classified = 0;  ///< lines the classifier recognised
};

// Feeds rendered steps to the signal engine as /dev/kmsg records from the kernel (facility 0) at
// the scenario's own pace, the way cmaxd's kmsg reader hands them over. Each line must also read
// back unchanged from a dmesg-style line, so no scenario line is mistaken for a prefix.
EngineRun run_engine(const std::vector<Step>& steps) {
  cmax::signals::Correlator correlator(catalog());
  const std::string node = "drill-node";
  EngineRun run;
  std::uint64_t t_us = 1000000000;  // 1000 s after boot
  std::uint64_t seq = 100;
  for (const Step& step : steps) {
    t_us += static_cast<std::uint64_t>(step.after_ms) * 1000;
    std::string record = fmt::format("{},{},{},-;{}", step.level, seq++, t_us, step.line);
    cmax::signals::LineInfo info = cmax::signals::parse_line_prefix(record, 2026);
    EXPECT_EQ(info.kmsg_prio, step.level) << record;
    EXPECT_EQ(info.message, step.line) << record;
    std::string dmesg = fmt::format("[{:5}.{:06}] {}", t_us / 1000000, t_us % 1000000, step.line);
    EXPECT_EQ(cmax::signals::parse_line_prefix(dmesg, 2026).message, step.line) << dmesg;

    auto sig = cmax::signals::classify(info.message);
    if (!sig) continue;
    ++run.classified;
    cmax::signals::Event e{&node, &info, &*sig, record};
    correlator.add(e);
  }
  run.incidents = correlator.incidents();
  return run;
}

// The strongest action over the incidents; nullopt when there are none.
std::optional<Action> strongest(const std::vector<Incident>& incidents) {
  std::optional<Action> a;
  for (const auto& i : incidents)
    if (!a || i.action > *a) a = i.action;
  return a;
}

std::string describe(const std::vector<Incident>& incidents) {
  std::string out;
  for (const auto& i : incidents)
    out += fmt::format("\n  {} code {} device '{}' subject '{}' -> {} ({})",
                       cmax::signals::to_string(i.kind), i.code, i.device, i.subject,
                       cmax::signals::to_string(i.action), i.reason);
  return out;
}

std::string scenario_json(std::string_view scenario_body) {
  return fmt::format(R"({{"schema": "cmax.drill-scenarios/1", "scenarios": [{}]}})", scenario_body);
}

std::string one_step(std::string_view step) {
  return scenario_json(fmt::format(
      R"({{"id": "x", "title": "t", "platforms": ["hgx"], "expect": "drain", "steps": [{}]}})",
      step));
}

std::string error_of(std::string_view json) {
  auto r = parse_scenarios(json, "test.json");
  EXPECT_FALSE(r) << json;
  return r ? std::string() : r.error().message;
}

}  // namespace

TEST(DrillScenarios, BuiltinFileParses) {
  auto all = builtins();
  std::set<std::string> ids;
  for (const auto& s : all) ids.insert(s.id);
  for (const char* id :
       {"xid79", "xid48", "xid64", "xid74", "xid94", "xid95", "xid119", "xid149", "sxid24007",
        "soft-lockup", "hung-task-lustre", "ib-link-down", "nfs-timeout"})
    EXPECT_TRUE(ids.count(id)) << "missing built-in scenario " << id;
  for (const auto& s : all) {
    EXPECT_FALSE(s.title.empty()) << s.id;
    EXPECT_FALSE(s.platforms.empty()) << s.id;
    EXPECT_FALSE(s.steps.empty()) << s.id;
  }
}

TEST(DrillScenarios, EveryBuiltinScenarioReachesItsExpectedAction) {
  auto all = builtins();
  ASSERT_FALSE(all.empty());
  for (const Scenario& s : all) {
    SCOPED_TRACE(s.id);
    auto steps = render(s, Targets{});
    ASSERT_TRUE(steps) << steps.error().message;
    ASSERT_EQ(steps->size(), s.steps.size());
    for (std::size_t i = 0; i < steps->size(); ++i) {
      EXPECT_EQ((*steps)[i].after_ms, s.steps[i].after_ms);
      EXPECT_EQ((*steps)[i].level, s.steps[i].level);
      EXPECT_EQ((*steps)[i].line.find('\n'), std::string::npos) << (*steps)[i].line;
      for (auto p : placeholder_names())
        EXPECT_EQ((*steps)[i].line.find(fmt::format("{{{}}}", p)), std::string::npos)
            << (*steps)[i].line;
    }
    EngineRun run = run_engine(*steps);
    ASSERT_FALSE(run.incidents.empty()) << "no line of " << s.id << " reaches the signal engine";
    EXPECT_EQ(strongest(run.incidents), s.expect)
        << s.id << " expects " << cmax::signals::to_string(s.expect)
        << "; incidents:" << describe(run.incidents);
  }
}

TEST(DrillScenarios, TargetsLandInTheFieldsDetectorsRead) {
  Targets t;
  t.gpu = "0000:b5:00";  // as an Xid line prints it; {gpu_fn} adds the function
  t.bridge = "0000:b4:02.0";
  t.nvswitch = "0000:05:00.0";
  t.ib_fn = "0000:9a:00.1";
  t.netdev = "ib3";
  t.server = "nas-7.example.org";
  t.cpu = 97;
  t.pid = 777;
  t.drill_id = "z9";
  for (const Scenario& s : builtins()) {
    SCOPED_TRACE(s.id);
    auto steps = render(s, t);
    ASSERT_TRUE(steps) << steps.error().message;
    EngineRun run = run_engine(*steps);
    EXPECT_EQ(strongest(run.incidents), s.expect) << describe(run.incidents);
    for (const Incident& i : run.incidents) {
      switch (i.kind) {
        case Kind::xid:
          EXPECT_EQ(i.device, "0000:b5:00");
          if (!i.subject.empty()) {
            EXPECT_EQ(i.subject, "cmaxdrill-z9");
          }
          break;
        case Kind::sxid:
          EXPECT_EQ(i.device, "0000:05:00.0");
          break;
        case Kind::aer_fatal:
          EXPECT_EQ(i.device, "0000:b4:02.0");
          break;
        case Kind::soft_lockup:
          EXPECT_EQ(i.code, 97);
          EXPECT_EQ(i.subject, "cmaxdrill-z9:777");
          break;
        case Kind::hung_task:
          EXPECT_EQ(i.subject, "cmaxdrill-z9:777");
          break;
        case Kind::ib_port:
          EXPECT_EQ(i.device, "0000:9a:00.1");
          break;
        case Kind::net_carrier:
          EXPECT_EQ(i.device, "ib3");
          break;
        case Kind::nfs_timeout:
          EXPECT_EQ(i.device, "nas-7.example.org");
          break;
        default:
          break;
      }
    }
  }
}

TEST(DrillScenarios, TheProofFailsForALineDetectorsDoNotKeyOn) {
  // The check above must be able to fail: a misspelt Xid line reaches no incident, and a scenario
  // whose expectation is weaker than its lines is caught.
  auto parsed = parse_scenarios(
      one_step(
          // (misspelt twice: "GPU has fallen off the bus" alone is the driver's own words, a signal)
          R"({"after_ms": 0, "level": 3, "line": "NVRM: Xld (PCI:{gpu}): 79, GPU has falen off the bus."})"),
      "test.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  auto steps = render(parsed->front(), Targets{});
  ASSERT_TRUE(steps);
  EXPECT_TRUE(run_engine(*steps).incidents.empty());

  const Scenario* xid79 = nullptr;
  auto all = builtins();
  xid79 = find_scenario(all, "xid79");
  ASSERT_NE(xid79, nullptr);
  auto rendered = render(*xid79, Targets{});
  ASSERT_TRUE(rendered);
  EXPECT_NE(strongest(run_engine(*rendered).incidents), Action::drain);
}

TEST(DrillScenarios, Xid79IsOneGpuFaultAfterTheBridgeReport) {
  auto all = builtins();
  const Scenario* s = find_scenario(all, "xid79");
  ASSERT_NE(s, nullptr);
  auto steps = render(*s, Targets{});
  ASSERT_TRUE(steps);
  EngineRun run = run_engine(*steps);
  // The port's own AER report, then the GPU's Xid 79 with the driver's Xid 154 folded into it.
  ASSERT_EQ(run.incidents.size(), 2u) << describe(run.incidents);
  EXPECT_EQ(run.incidents[0].kind, Kind::aer_fatal);
  EXPECT_EQ(run.incidents[0].device, "0000:3a:00.0");
  EXPECT_EQ(run.incidents[1].kind, Kind::xid);
  EXPECT_EQ(run.incidents[1].code, 79);
  EXPECT_EQ(run.incidents[1].action, Action::reboot_node);
  // The driver's own "GPU has fallen off the bus" line and Xid 154 fold into the Xid 79 incident...
  std::vector<std::string> related = run.incidents[1].related;
  std::sort(related.begin(), related.end());
  EXPECT_EQ(related, (std::vector<std::string>{"Xid 154 x1", "gpu_off_bus x1"})) << describe(run.incidents);
  // ...and the bridge's AER report is its root cause.
  EXPECT_EQ(run.incidents[1].parent, 0);
  EXPECT_EQ(run.incidents[0].children, std::vector<std::size_t>{1});
  EXPECT_EQ(run.incidents[0].action, Action::reboot_node);
}

TEST(DrillScenarios, BuiltinScenariosFitTheKmsgBurstAndTheLineLimit) {
  // Userspace writes to /dev/kmsg past 10 in 5 s are dropped unless printk_devkmsg=on.
  for (const Scenario& s : builtins()) {
    EXPECT_LE(s.steps.size(), 10u) << s.id;
    for (const auto& p : s.platforms) EXPECT_TRUE(p == "hgx" || p == "nvl72") << s.id << ": " << p;
  }
}

TEST(DrillScenarios, DocsListEveryBuiltinScenario) {
  std::ifstream in(std::filesystem::path(CMAX_SOURCE_DIR) / "docs" / "drills.md");
  ASSERT_TRUE(in) << "docs/drills.md is missing";
  std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const Scenario& s : builtins()) {
    EXPECT_NE(doc.find(fmt::format("| `{}` |", s.id)), std::string::npos)
        << s.id << " is not in the docs table";
    EXPECT_NE(doc.find(fmt::format("`{}`", cmax::signals::to_string(s.expect))), std::string::npos);
  }
  for (auto p : placeholder_names())
    EXPECT_NE(doc.find(fmt::format("`{{{}}}`", p)), std::string::npos) << p;
}

TEST(DrillScenarios, FindScenario) {
  auto all = builtins();
  ASSERT_NE(find_scenario(all, "xid79"), nullptr);
  EXPECT_EQ(find_scenario(all, "xid79")->id, "xid79");
  EXPECT_EQ(find_scenario(all, "xid80"), nullptr);
  EXPECT_EQ(find_scenario(all, ""), nullptr);
}

TEST(DrillScenarios, ParsesAScenarioFile) {
  auto r = parse_scenarios(
      scenario_json(
          R"({"id": "my-drill-2", "title": "two lines", "platforms": ["nvl72", "hgx"], "expect": "reset_gpu",
           "steps": [{"after_ms": 0, "level": 3, "line": "a {gpu}"}, {"after_ms": 600000, "level": 7, "line": "b {{x}}"}]})"),
      "test.json");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  const Scenario& s = r->front();
  EXPECT_EQ(s.id, "my-drill-2");
  EXPECT_EQ(s.title, "two lines");
  EXPECT_EQ(s.platforms, (std::vector<std::string>{"nvl72", "hgx"}));
  EXPECT_EQ(s.expect, Action::reset_gpu);
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[1].after_ms, 600000);
  EXPECT_EQ(s.steps[1].level, 7);
  EXPECT_EQ(s.steps[1].line, "b {{x}}");  // the template, rendered only by render()
  auto steps = render(s, Targets{});
  ASSERT_TRUE(steps);
  EXPECT_EQ((*steps)[0].line, "a 0000:3b:00");
  EXPECT_EQ((*steps)[1].line, "b {x}");
}

TEST(DrillScenarios, ParserErrorsNameTheFileScenarioStepAndProblem) {
  struct Case {
    std::string json;
    std::vector<std::string> parts;
  };
  const std::string step = R"({"after_ms": 0, "level": 3, "line": "ok"})";
  std::string many_steps;
  for (int i = 0; i < 65; ++i) many_steps += (i ? ", " : "") + step;
  const std::vector<Case> cases = {
      {"{\"schema\": ", {"test.json", "not valid JSON"}},
      {"[]", {"test.json", "must be a JSON object"}},
      {R"({"schema": "cmax.drill-scenarios/2", "scenarios": []})",
       {"schema", "cmax.drill-scenarios/1"}},
      {R"({"schema": "cmax.drill-scenarios/1", "scenarios": [], "x": 1})", {"unknown key 'x'"}},
      {R"({"schema": "cmax.drill-scenarios/1", "scenarios": []})", {"scenarios", "is empty"}},
      {scenario_json("3"), {"scenarios[0]", "must be an object"}},
      {scenario_json(R"({"title": "t"})"), {"scenarios[0]", "'id' is missing"}},
      {scenario_json(R"({"id": "Xid 79"})"), {"scenarios[0]", "id 'Xid 79' is not valid"}},
      {scenario_json(
           std::string(
               R"({"id": "a", "title": "t", "platforms": ["hgx"], "expect": "drain", "steps": [)") +
           step + "]}, " +
           R"({"id": "a", "title": "t", "platforms": ["hgx"], "expect": "drain", "steps": [)" +
           step + "]}"),
       {"scenario 'a'", "scenarios[0] and scenarios[1]", "unique"}},
      {scenario_json(
           R"({"id": "a", "title": "t", "platforms": ["hgx"], "expected": "drain", "steps": []})"),
       {"scenario 'a'", "unknown key 'expected'"}},
      {scenario_json(R"({"id": "a", "title": "t", "platforms": ["hgx"], "steps": []})"),
       {"scenario 'a'", "'expect' is missing"}},
      {scenario_json(
           R"({"id": "a", "title": "", "platforms": ["hgx"], "expect": "drain", "steps": []})"),
       {"scenario 'a'", "'title'"}},
      {scenario_json(
           R"({"id": "a", "title": "t", "platforms": ["dgx"], "expect": "drain", "steps": []})"),
       {"scenario 'a'", "'platforms[0]' is 'dgx'", "hgx, nvl72"}},
      {scenario_json(
           R"({"id": "a", "title": "t", "platforms": [], "expect": "drain", "steps": []})"),
       {"scenario 'a'", "'platforms' must be a non-empty array"}},
      {scenario_json(
           R"({"id": "a", "title": "t", "platforms": ["hgx"], "expect": "reboot", "steps": []})"),
       {"test.json", "scenario 'a'", "'expect' is 'reboot', not an action", "reboot_node"}},
      {scenario_json(
           R"({"id": "a", "title": "t", "platforms": ["hgx"], "expect": "drain", "steps": []})"),
       {"test.json", "scenario 'a'", "'steps' is empty"}},
      {scenario_json(
           R"({"id": "a", "title": "t", "platforms": ["hgx"], "expect": "drain", "steps": [)" +
           many_steps + "]}"),
       {"scenario 'a'", "holds 65 steps", "at most 64"}},
      {one_step(R"({"after_ms": 0, "level": 8, "line": "x"})"),
       {"test.json", "scenario 'x', steps[0]", "'level' is 8", "0 (emerg) to 7 (debug)"}},
      {one_step(step + R"(, {"after_ms": 0, "level": -1, "line": "x"})"),
       {"scenario 'x', steps[1]", "'level' is -1"}},
      {one_step(R"({"after_ms": 0, "level": "3", "line": "x"})"), {"steps[0]", "'level' is \"3\""}},
      {one_step(R"({"after_ms": -1, "level": 3, "line": "x"})"),
       {"steps[0]", "'after_ms' is -1", "milliseconds"}},
      {one_step(R"({"after_ms": 1.5, "level": 3, "line": "x"})"),
       {"steps[0]", "'after_ms' is 1.5"}},
      {one_step(R"({"after_ms": 600001, "level": 3, "line": "x"})"),
       {"steps[0]", "'after_ms' is 600001"}},
      {one_step(R"({"after_ms": 0, "level": 3})"), {"steps[0]", "'line' is missing"}},
      {one_step(R"({"after_ms": 0, "level": 3, "line": "x", "lvl": 3})"),
       {"steps[0]", "unknown key 'lvl'"}},
      {one_step(R"({"after_ms": 0, "level": 3, "line": ""})"), {"steps[0]", "'line' is empty"}},
      {one_step(R"({"after_ms": 0, "level": 3, "line": "NVRM: Xid (PCI:{gpux}): 79"})"),
       {"test.json", "scenario 'x', steps[0]", "unknown placeholder {gpux}", "{gpu}, {gpu_fn}",
        "{pid}"}},
      {one_step(R"({"after_ms": 0, "level": 3, "line": "x {gpu"})"),
       {"steps[0]", "'{' at byte 2 that is never closed"}},
      {one_step(R"({"after_ms": 0, "level": 3, "line": "Data {0x0}"})"),
       {"steps[0]", "unknown placeholder {0x0}"}},
      {one_step(R"({"after_ms": 0, "level": 3, "line": "x } y"})"),
       {"steps[0]", "'}' at byte 2 that closes nothing", "}}"}},
      {one_step(R"({"after_ms": 0, "level": 3, "line": "two\nlines"})"),
       {"steps[0]", "0x0a", "one line"}},
      {one_step(R"({"after_ms": 0, "level": 3, "line": "caf\u00e9"})"),
       {"steps[0]", "0xc3", "printable ASCII"}},
      {one_step(
           fmt::format(R"({{"after_ms": 0, "level": 3, "line": "{}"}})", std::string(401, 'a'))),
       {"steps[0]", "401 bytes", "at most 400"}},
  };
  for (const auto& c : cases) {
    std::string message = error_of(c.json);
    for (const auto& part : c.parts)
      EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
  }
}

TEST(DrillRender, EveryPlaceholderHasASensibleDefault) {
  const std::vector<std::pair<std::string, std::string>> expected = {{"{gpu}", "0000:3b:00"},
                                                                     {"{gpu_fn}", "0000:3b:00.0"},
                                                                     {"{bridge}", "0000:3a:00.0"},
                                                                     {"{nvswitch}", "0000:c3:00.0"},
                                                                     {"{ib}", "mlx5_0"},
                                                                     {"{ib_fn}", "0000:1a:00.0"},
                                                                     {"{netdev}", "ib0"},
                                                                     {"{cpu}", "12"},
                                                                     {"{server}", "nfs01"},
                                                                     {"{comm}", "cmaxdrill-0000"},
                                                                     {"{pid}", "4321"}};
  ASSERT_EQ(expected.size(), placeholder_names().size());
  for (const auto& [tmpl, value] : expected) {
    auto r = render_line(tmpl, Targets{});
    ASSERT_TRUE(r) << tmpl << ": " << r.error().message;
    EXPECT_EQ(*r, value) << tmpl;
  }
}

TEST(DrillRender, DoubledBracesAreLiteral) {
  auto r = render_line("a {{b}} {{{gpu}}} }}{{ {{gpu}}", Targets{});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "a {b} {0000:3b:00} }{ {gpu}");
  // A value that holds braces is not expanded again.
  Targets t;
  t.server = "[fd00::1]";
  auto v = render_line("nfs: server {server} not responding, still trying", t);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(*v, "nfs: server [fd00::1] not responding, still trying");
}

TEST(DrillRender, CommCarriesTheDrillIdAndFitsTheKernelsLimit) {
  Targets t;
  t.drill_id = "1a2b";
  EXPECT_EQ(render_line("{comm}", t).value_or(""), "cmaxdrill-1a2b");
  t.drill_id = "12345";
  EXPECT_EQ(render_line("{comm}", t).value_or(""), "cmaxdrill-12345");  // 15 characters
  t.drill_id = "123456";
  auto r = render_line("{comm}", t);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("16 characters"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("at most 5"), std::string::npos) << r.error().message;

  Targets own;
  own.comm = "python3";
  EXPECT_EQ(render_line("[{comm}:{pid}]", own).value_or(""), "[python3:4321]");
  own.comm = "a-much-too-long-name";
  EXPECT_FALSE(render_line("{comm}", own));
}

TEST(DrillRender, RejectsValuesThatWouldBreakAKernelLine) {
  auto refused = [](Targets t, std::vector<std::string> parts) {
    auto v = validate_targets(t);
    ASSERT_FALSE(v);
    for (const auto& p : parts)
      EXPECT_NE(v.error().message.find(p), std::string::npos) << p << " in: " << v.error().message;
    auto r = render_line("{gpu}", t);  // whether or not the template uses the value
    EXPECT_FALSE(r);
  };
  Targets t;
  t.server = "nfs01\nNVRM: Xid (PCI:0000:3b:00): 79";
  refused(t, {"{server}", "0x0a", "newline"});
  t = Targets{};
  t.netdev = "ib0\x1b[31m";
  refused(t, {"{netdev}", "0x1b", "control character"});
  t = Targets{};
  t.comm = "python 3";
  refused(t, {"{comm}", "' '"});
  t = Targets{};
  t.comm = "py\tthon";
  refused(t, {"{comm}", "0x09"});
  t = Targets{};
  t.drill_id = "a:b";
  refused(t, {"drill id", "':'"});
  t = Targets{};
  t.server = "";
  refused(t, {"{server}", "empty"});
  t = Targets{};
  t.bridge = "0000:3a:00";
  refused(t, {"{bridge}", "not a PCI function address"});
  t = Targets{};
  t.gpu = "GPU0";
  refused(t, {"{gpu}", "not a PCI function address"});
  t = Targets{};
  t.ib = "mlx5,0";
  refused(t, {"{ib}", "','"});
  t = Targets{};
  t.netdev = "a-very-long-ifname";
  refused(t, {"{netdev}", "at most 15"});
  t = Targets{};
  t.cpu = -1;
  refused(t, {"{cpu}", "-1"});
  t = Targets{};
  t.pid = 0;
  refused(t, {"{pid}", "1 to 4194304"});
  t = Targets{};
  t.server = "caf\xc3\xa9";
  refused(t, {"{server}", "0xc3", "non-ASCII"});

  EXPECT_TRUE(validate_targets(Targets{}));
}

TEST(DrillRender, RejectsLinesTooLongForTheKernel) {
  Targets t;
  t.server = std::string(253, 's');
  std::string tmpl;
  for (int i = 0; i < 4; ++i) tmpl += "{server}";
  auto r = render_line(tmpl, t);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find(fmt::format("keeps {}", kMaxLineBytes)), std::string::npos)
      << r.error().message;
  tmpl.resize(3 * 8);
  EXPECT_TRUE(render_line(tmpl, t));
}

TEST(DrillRender, RenderErrorsNameTheScenarioAndStep) {
  Scenario s;
  s.id = "hand-made";
  s.steps = {Step{0, 3, "fine {gpu}"}, Step{0, 3, "broken {nope}"}};
  auto r = render(s, Targets{});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("scenario 'hand-made', steps[1]"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("{nope}"), std::string::npos) << r.error().message;

  Targets bad;
  bad.pid = -5;
  auto b = render(s, bad);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("scenario 'hand-made'"), std::string::npos) << b.error().message;
}
