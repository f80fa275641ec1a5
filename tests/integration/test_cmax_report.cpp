// cmax report on a real run directory (issue 10's acceptance): `cmax run` on this machine, `cmax
// nccl analyze` of a real nccl-tests log, `cmax endpoint bench` against `cmax endpoint serve`, `cmax
// sla`, `cmax scan` of real kernel-log lines and a real drill on a real Slurm with cmaxd, all into
// one directory; then the page in headless Chromium (Debian's package, a fresh profile, no network):
// no console message at all, every chart present in the parsed DOM, screenshots at desktop and
// phone widths.

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include "core/process.h"
#include "support/daemon.h"
#include "support/slurm_cluster.h"
#include "support/temp_host.h"
#include "endpoint_serve_fixture.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

struct Proc {
  int code = -1;
  std::string out, err;
};

Proc run(std::vector<std::string> argv, std::chrono::seconds timeout = 120s, std::vector<std::string> env = {}) {
  auto r = cmax::core::run_process({argv, timeout, 32u << 20, env});
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  if (!r) return {};
  EXPECT_FALSE(r->timed_out) << argv[0] << " " << (argv.size() > 1 ? argv[1] : "");
  return {r->exit_code, r->out, r->err};
}

Proc cmax_cmd(std::vector<std::string> args, std::chrono::seconds timeout = 120s) {
  args.insert(args.begin(), CMAX_BIN);
  return run(std::move(args), timeout);
}

void write(const fs::path& p, std::string_view text) { std::ofstream(p) << text; }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Headless Chromium with a fresh profile and no way out: every host resolves to nothing and a
// proxy on a closed loopback port takes anything else.
struct Chromium {
  std::string bin;
  cmax::test::TempHost profile;

  Proc open(const fs::path& page, std::vector<std::string> mode) {
    std::vector<std::string> argv{bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                                  "--user-data-dir=" + (profile.dir() / "profile").string(),
                                  "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
                                  "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000"};
    argv.insert(argv.end(), mode.begin(), mode.end());
    argv.push_back("file://" + fs::absolute(page).string());
    return run(argv, 90s);
  }
};

// Chromium logs every console message (console.*, CSP violations, failed loads) as INFO:CONSOLE.
std::vector<std::string> console_lines(const std::string& err) {
  std::vector<std::string> out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);)
    if (line.find(":CONSOLE") != std::string::npos) out.push_back(line);
  return out;
}

std::multiset<std::string> charts_in(const std::string& dom) {
  std::multiset<std::string> out;
  static const std::regex kChart("<svg[^>]*data-chart=\"([a-z-]+)\"");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), kChart); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1].str());
  return out;
}

bool is_png(const fs::path& p) {
  std::string head = slurp(p).substr(0, 8);
  return head == std::string("\x89PNG\r\n\x1a\n", 8);
}

// A real drill: cmaxd on n1 detects the injected Xid 79 and drains; the reservation takes a spare.
void real_drill(const fs::path& out) {
  using cmax::test::SlurmCluster;
  if (auto why = SlurmCluster::unavailable()) {
    std::printf("[ skipped  ] drill section: %s\n", why->c_str());
    return;
  }
  if (::access("/dev/kmsg", W_OK) != 0) return;
  auto c = SlurmCluster::start({.nodes = 4, .spares = 2});
  ASSERT_TRUE(c) << c.error().message;
  auto& cluster = **c;
  auto res = cluster.scontrol({"create", "reservation", "ReservationName=drill", "StartTime=now", "Duration=60",
                               "Users=root", "NodeCnt=2", "Flags=REPLACE_DOWN"});
  ASSERT_TRUE(res && res->exit_code == 0);
  auto agent = cmax::test::Daemon::start({CMAXD_BIN, "--node", "n1", "--db", (cluster.dir() / "cmaxd.db").string(),
                                          "--slurm-conf", cluster.conf_path(), "--from-now", "--metrics-listen", "",
                                          "--no-nvml", "--no-ib", "--fleet-max-percent", "50"},
                                         {}, cluster.dir() / "cmaxd.log");
  ASSERT_TRUE(agent) << agent.error().message;
  std::this_thread::sleep_for(500ms);
  auto d = cmax_cmd({"drill", "run", "--slurm-conf", cluster.conf_path(), "--inject", "local", "--json", "--out",
                     out.string(), "--scenario", "xid79", "--nodes", "n1", "--yes", "--reservation", "drill",
                     "--detect-timeout-s", "10", "--drain-timeout-s", "10", "--replace-timeout-s", "15",
                     // The cmaxd here stands for the provider's detector: its times are scored.
                     "--provider-runs-cmax"});
  ASSERT_TRUE(fs::exists(out / "drill.json")) << d.out << d.err;
  cmax_cmd({"drill", "cleanup", "--run", out.string(), "--slurm-conf", cluster.conf_path(), "--yes"}, 30s);
}

TEST(CmaxReport, ARealRunRendersInHeadlessChromiumWithEveryChartAndNoConsoleMessage) {
  cmax::test::TempHost t;
  const fs::path dir = t.dir() / "provider-a";

  // 1. The main job; it ends by writing the report already.
  auto r = cmax_cmd({"run", "--stage", "audit", "--harness", "standalone", "--out", dir.string()});
  ASSERT_LE(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("Report: " + (dir / "report.html").string()), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(dir / "report.html"));

  // 2. The stages, into the same directory.
  // Real logs kept in the repository (tests/golden/nccl/README.md says where each comes from).
  const fs::path golden = fs::path(CMAX_SOURCE_DIR) / "tests" / "golden" / "nccl";
  auto nccl = cmax_cmd({"nccl", "analyze", "--out", dir.string(),
                        (golden / "02_nccl-tests-309_h100_4node_32gpu_allreduce_default.txt").string(),
                        (golden / "08_aws-ofi-nccl-65_p4d_2node_16gpu_allreduce_dip_64MB_oldformat.txt").string()});
  ASSERT_LE(nccl.code, 1) << nccl.out << nccl.err;
  ASSERT_TRUE(fs::exists(dir / "nccl.json"));

  // Real Xid lines (shared/data/xid/kernel_log_examples.txt, which is not beside every checkout).
  write(t.dir() / "kern.log",
        "[ 130.456250] [ T1946] NVRM: Xid (PCI:0000:2b:00): 31, pid=1942, name=llama-bench, channel 0x00000002, intr "
        "00000000. MMU Fault: ENGINE GRAPHICS GPC6 GPCCLIENT_T1_13 faulted @ 0x6f6f_320c2000. Fault is of type "
        "FAULT_PDE ACCESS_TYPE_VIRT_READ\n"
        "NVRM: Xid (PCI:0000:8a:00): 48, An uncorrectable double bit error (DBE) has been detected on GPU in the "
        "framebuffer at partition 4, subpartition 1\n"
        "[2397166.923949] NVRM: Xid (PCI:0000:0f:00): 64, pid='<unknown>', name=<unknown>, Row Remapper Error: "
        "(0x00000002eebc4100) - All reserved rows for bank are remapped\n"
        "NVRM: Xid (PCI:0000:01:00): 43, Ch 00000020, engmask 00000101\n");
  auto scan = cmax_cmd({"scan", "--json", (t.dir() / "kern.log").string()});
  ASSERT_LE(scan.code, 1) << scan.err;
  write(dir / "scan.json", scan.out);

  write(t.dir() / "events.csv",
        "node,start,end,state,reason\n"
        "dfw1-r01-t01,2026-04-03T10:00:00Z,2026-04-03T14:00:00Z,down,xid 79\n"
        "dfw1-r01-t02,2026-04-03T11:00:00Z,2026-04-03T13:00:00Z,down,xid 79\n"
        "ord2-r02-t07,2026-06-10T00:00:00Z,2026-06-12T00:00:00Z,down,psu\n"
        "dfw1-r03-t05,2026-09-30T20:00:00Z,,down,open\n");
  auto sla = cmax_cmd({"sla", "--contract", (fs::path(CMAX_SOURCE_DIR) / "docs" / "sla-contract.sample.json").string(),
                       "--events-csv", (t.dir() / "events.csv").string(), "--from", "2026-01", "--to", "2026-12",
                       "--json"});
  ASSERT_LE(sla.code, 1) << sla.err;
  write(dir / "sla.json", sla.out);

  {
    cmax::test::ServeProcess serve({"--time-scale", "0"});
    ASSERT_GT(serve.port(), 0) << serve.error();
    write(t.dir() / "prices.json",
          R"({"schema":"cmax.prices/1","providers":{"provider-a":{"input_per_mtok":0.25,"cached_input_per_mtok":0.025,"output_per_mtok":1.0}}})");
    auto b = cmax_cmd({"endpoint", "bench", "--out", dir.string(), "--base-url", serve.base_url(), "--provider",
                       "provider-a", "--prices", (t.dir() / "prices.json").string(), "--multiturn", "--sessions", "12",
                       "--turns", "2", "--concurrency", "1,2,4", "--requests-per-level", "8"});
    ASSERT_EQ(b.code, 0) << b.out << b.err;
  }

  real_drill(dir);
  const bool drilled = fs::exists(dir / "drill.json");

  // 3. The report.
  auto rep = cmax_cmd({"report", dir.string(), "--json"});
  ASSERT_EQ(rep.code, 0) << rep.out << rep.err;
  auto j = json::parse(rep.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << rep.out;
  EXPECT_EQ(j["schema"], "cmax.report/1");
  EXPECT_EQ(j["path"], (dir / "report.html").string());
  EXPECT_EQ(j["runs"][0]["warnings"], json::array()) << j.dump(2);
  std::multiset<std::string> want{"scorecard", "findings", "nccl", "nccl", "availability", "endpoint-latency",
                                  "endpoint-hit-rate", "endpoint-cost"};
  if (drilled) want.insert("drill");
  std::multiset<std::string> listed;
  for (const auto& c : j["charts"]) listed.insert(c.get<std::string>());
  EXPECT_EQ(listed, want);
  const std::string html = slurp(dir / "report.html");
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);

  // 4. Chromium.
  auto bin = cmax::test::find_system_program("chromium");
  if (!bin) GTEST_SKIP() << "chromium is not installed (scripts/setup-deps --test installs it)";
  Chromium browser{*bin, {}};

  // The detector can fail: a page that breaks its own CSP gives a console line.
  write(t.dir() / "control.html",
        "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\">"
        "</head><body><img src=\"http://192.0.2.1/x.png\"></body></html>");
  auto control = browser.open(t.dir() / "control.html", {"--dump-dom"});
  ASSERT_EQ(control.code, 0) << control.err;
  EXPECT_FALSE(console_lines(control.err).empty()) << "the console detector saw nothing on the control page:\n"
                                                    << control.err;

  auto dom = browser.open(dir / "report.html", {"--dump-dom"});
  ASSERT_EQ(dom.code, 0) << dom.err;
  EXPECT_EQ(console_lines(dom.err), std::vector<std::string>{}) << dom.err;
  EXPECT_EQ(charts_in(dom.out), want) << "the parsed DOM must hold every chart";
  EXPECT_NE(dom.out.find("id=\"run-0-drill\""), std::string::npos) << (drilled ? "" : "(no drill: no Slurm)");

  const fs::path shots = std::getenv("CMAX_KEEP_SCREENSHOTS") ? fs::path(std::getenv("CMAX_KEEP_SCREENSHOTS")) : t.dir();
  fs::create_directories(shots);
  for (auto [name, size] : {std::pair{"report-desktop.png", "1280,4000"}, std::pair{"report-phone.png", "390,2400"}}) {
    auto shot = browser.open(dir / "report.html", {"--hide-scrollbars", std::string("--window-size=") + size,
                                                    "--screenshot=" + (shots / name).string()});
    ASSERT_EQ(shot.code, 0) << shot.err;
    EXPECT_EQ(console_lines(shot.err), std::vector<std::string>{});
    ASSERT_TRUE(fs::exists(shots / name)) << shot.err;
    EXPECT_TRUE(is_png(shots / name));
    EXPECT_GT(fs::file_size(shots / name), 20000u) << "a blank page compresses to almost nothing";
    std::printf("[ measure  ] screenshot %s: %zu bytes\n", (shots / name).c_str(),
                static_cast<std::size_t>(fs::file_size(shots / name)));
  }
  // Printable: Chromium's print path lays the page out on paper without errors.
  const fs::path pdf = shots / "report.pdf";
  auto printed = browser.open(dir / "report.html", {"--no-pdf-header-footer", "--print-to-pdf=" + pdf.string()});
  ASSERT_EQ(printed.code, 0) << printed.err;
  EXPECT_EQ(console_lines(printed.err), std::vector<std::string>{});
  ASSERT_TRUE(fs::exists(pdf)) << printed.err;
  const std::string doc = slurp(pdf);
  EXPECT_EQ(doc.rfind("%PDF-", 0), 0u);
  std::printf("[ measure  ] printed %s: %zu bytes\n", pdf.c_str(), doc.size());
  EXPECT_GT(doc.size(), 20000u);
}

TEST(CmaxReport, SeveralRunsSideBySideAndClearErrors) {
  cmax::test::TempHost t;
  for (const char* name : {"a", "b"}) {
    auto r = cmax_cmd({"run", "--stage", "audit", "--harness", "standalone", "--out", (t.dir() / name).string(), "--json"});
    ASSERT_LE(r.code, 2) << r.err;
    EXPECT_TRUE(fs::exists(t.dir() / name / "report.html")) << "--json runs write the report too";
  }
  write(t.dir() / "b" / "nccl.json", "{\"schema\": \"cmax.nccl/1\", \"runs\": [");
  const auto out = (t.dir() / "both.html").string();
  auto rep = cmax_cmd({"report", (t.dir() / "a").string(), (t.dir() / "b").string(), "--out", out});
  ASSERT_EQ(rep.code, 0) << rep.err;
  EXPECT_NE(rep.out.find("report: " + out), std::string::npos) << rep.out;
  EXPECT_NE(rep.out.find("warning: nccl.json: not JSON"), std::string::npos) << rep.out;
  const std::string html = slurp(out);
  EXPECT_NE(html.find("id=\"compare\""), std::string::npos);
  EXPECT_NE(html.find("id=\"run-1\""), std::string::npos);

  auto missing = cmax_cmd({"report", (t.dir() / "nope").string()});
  EXPECT_EQ(missing.code, 3);
  EXPECT_NE(missing.err.find("results.json"), std::string::npos) << missing.err;
  auto unwritable = cmax_cmd({"report", (t.dir() / "a").string(), "--out", "/nonexistent-dir/r.html"});
  EXPECT_EQ(unwritable.code, 3);
  EXPECT_NE(unwritable.err.find("/nonexistent-dir/r.html"), std::string::npos) << unwritable.err;
}

}  // namespace
