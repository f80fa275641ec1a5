#include <gtest/gtest.h>

#include "store/run_store.h"
#include "support/temp_host.h"

using namespace cmax::store;

TEST(RunStore, WritesAndReadsBackARun) {
  cmax::test::TempHost t;
  auto path = (t.dir() / "cmax.db").string();
  auto st = RunStore::open(path);
  ASSERT_TRUE(st) << st.error().message;
  RunRow run{"2026-12-02T12:00:00Z", "2026-12-02T12:00:01Z", "node1", "standalone", "0.1.0", "/", 1};
  std::vector<FactRow> facts{{"kernel.release", "present", "6.1.0", "/proc/sys/kernel/osrelease", ""},
                             {"gpu.driver.version", "absent", "", "/proc/driver/nvidia/version", "not loaded"}};
  FindingRow f;
  f.check_id = "security.runc.floor";
  f.category = "security";
  f.severity = "version";
  f.security = true;
  f.result = "fail";
  f.title = "runc";
  f.observed = "1.1.5";
  f.expected = ">= 1.3.6";
  f.cves = "CVE-2024-21626,CVE-2025-31133";
  auto id = st->write_run(run, facts, {f});
  ASSERT_TRUE(id) << id.error().message;
  auto back = st->findings(*id);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].check_id, "security.runc.floor");
  EXPECT_TRUE((*back)[0].security);
  EXPECT_EQ((*back)[0].cves, "CVE-2024-21626,CVE-2025-31133");
  auto facts_back = st->facts(*id);
  ASSERT_TRUE(facts_back);
  EXPECT_EQ(facts_back->size(), 2u);
  // A second run goes into the same file with its own id.
  auto id2 = st->write_run(run, facts, {});
  ASSERT_TRUE(id2);
  EXPECT_NE(*id, *id2);
}

TEST(RunStore, DuplicateFactKeysRollBackTheWholeRun) {
  cmax::test::TempHost t;
  auto st = RunStore::open((t.dir() / "cmax.db").string());
  ASSERT_TRUE(st);
  std::vector<FactRow> dup{{"k", "present", "1", "s", ""}, {"k", "present", "2", "s", ""}};
  auto id = st->write_run({}, dup, {});
  ASSERT_FALSE(id);
  auto ok = st->write_run({}, {{"k", "present", "1", "s", ""}}, {});
  ASSERT_TRUE(ok) << ok.error().message;
}

TEST(RunStore, UnwritableLocationNamesThePath) {
  auto st = RunStore::open("/nonexistent-dir/sub/cmax.db");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("/nonexistent-dir/sub/cmax.db"), std::string::npos);
}
