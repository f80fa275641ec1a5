#include <gtest/gtest.h>

#include <unistd.h>

#include <random>

#include <fmt/format.h>

#include "agent/event_log.h"
#include "store/sqlite.h"

namespace cmax::agent {
namespace {

EventRow row(std::uint64_t seq, const std::string& incident = "n1|xid|79|0000:3b:00") {
  EventRow e;
  e.boot_id = "boot-a";
  e.seq = seq;
  e.t_unix = 1000;
  e.incident = incident;
  e.node = "n1";
  e.kind = "xid";
  e.code = 79;
  e.device = "0000:3b:00";
  e.action = "reboot_node";
  e.origin = "kernel";
  e.line = "6,1,2,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.";
  return e;
}

TEST(EventLog, ResumePointRoundTrips) {
  auto log = EventLog::open(":memory:");
  ASSERT_TRUE(log) << log.error().message;
  auto none = log->resume_point();
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  ASSERT_TRUE(log->save_resume_point({"boot-a", 41}));
  ASSERT_TRUE(log->save_resume_point({"boot-a", 42}));
  auto p = log->resume_point();
  ASSERT_TRUE(p && *p);
  EXPECT_EQ((*p)->boot_id, "boot-a");
  EXPECT_EQ((*p)->seq, 42u);
}

TEST(EventLog, AnEventReadTwiceIsRecordedOnce) {
  auto log = EventLog::open(":memory:");
  ASSERT_TRUE(log);
  auto a = log->record_event(row(7));
  auto b = log->record_event(row(7));  // a restart re-reads the record
  auto c = log->record_event(row(8));
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
  EXPECT_TRUE(log->add_repeats(*a, 9999, 10006));
}

TEST(EventLog, ProbeFindingsHaveNoSeqAndEachIsItsOwnRow) {
  auto log = EventLog::open(":memory:");
  ASSERT_TRUE(log);
  EventRow e = row(0, "n1|fs_hung|-1|/lustre");
  e.seq.reset();
  e.origin = "probe:fs";
  auto a = log->record_event(e);
  auto b = log->record_event(e);
  ASSERT_TRUE(a && b) << (a ? b.error().message : a.error().message);
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(log->add_repeats(*a, 3, 12345));
}

// A database written by the first cmaxd (events.seq NOT NULL, user_version 0) opens, keeps its
// rows, and takes probe findings.
TEST(EventLog, UpgradesAVersion1Database) {
  const std::string path = ::testing::TempDir() + fmt::format("cmax-evlog-v1-{}-{}.db", ::getpid(), std::random_device{}());
  {
    auto db = store::Database::open(path);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->exec(R"sql(
CREATE TABLE state(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE events(
  id INTEGER PRIMARY KEY, boot_id TEXT NOT NULL, seq INTEGER NOT NULL, last_seq INTEGER NOT NULL,
  t_unix REAL NOT NULL, incident TEXT NOT NULL, node TEXT NOT NULL, kind TEXT NOT NULL, code INTEGER,
  device TEXT NOT NULL, action TEXT NOT NULL, origin TEXT NOT NULL, line TEXT NOT NULL,
  lines INTEGER NOT NULL DEFAULT 1, UNIQUE(boot_id, seq));
INSERT INTO events(boot_id, seq, last_seq, t_unix, incident, node, kind, code, device, action, origin, line)
  VALUES ('boot-a', 7, 7, 1000, 'n1|xid|79|0000:3b:00', 'n1', 'xid', 79, '0000:3b:00', 'reboot_node', 'kernel', 'x');
)sql"));
  }
  {
    auto log = EventLog::open(path);
    ASSERT_TRUE(log) << log.error().message;
    auto again = log->record_event(row(7));  // the old row is still there: same id, no new row
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, 1);
    EventRow e = row(0, "n1|fs_hung|-1|/lustre");
    e.seq.reset();
    auto probe = log->record_event(e);
    ASSERT_TRUE(probe) << probe.error().message;
    EXPECT_EQ(*probe, 2);
  }
  auto reopened = EventLog::open(path);  // already version 2: nothing to do
  ASSERT_TRUE(reopened) << reopened.error().message;
  for (const char* ext : {"", "-wal", "-shm"}) std::remove((path + ext).c_str());
}

TEST(EventLog, ActionsArePendingUntilFinishedAndCountedForTheBreaker) {
  auto log = EventLog::open(":memory:");
  ASSERT_TRUE(log);
  auto ev = log->record_event(row(7));
  ASSERT_TRUE(ev);
  auto id = log->begin_action("n1|xid|79|0000:3b:00", *ev, "drain", "n1", "cmax: Xid 79", 1000);
  ASSERT_TRUE(id);
  auto pending = log->pending_actions();
  ASSERT_TRUE(pending);
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ((*pending)[0].verb, "drain");
  auto n = log->count_actions("drain", 999);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 1);  // pending counts: the breaker must not let a burst through before any finishes
  ASSERT_TRUE(log->finish_action(*id, "done", "scontrol update ...", 1000.02));
  pending = log->pending_actions();
  ASSERT_TRUE(pending);
  EXPECT_TRUE(pending->empty());
  auto last = log->last_action("n1|xid|79|0000:3b:00");
  ASSERT_TRUE(last && *last);
  EXPECT_EQ((*last)->status, "done");
  EXPECT_EQ(*log->count_actions("drain", 1001), 0);  // outside the window
  auto refused = log->begin_action("k", *ev, "drain", "n1", "r", 1000);
  ASSERT_TRUE(refused);
  ASSERT_TRUE(log->finish_action(*refused, "refused", "circuit breaker", 1000));
  EXPECT_EQ(*log->count_actions("drain", 999), 1);  // refusals do not count
  auto missing = log->last_action("other");
  ASSERT_TRUE(missing);
  EXPECT_FALSE(*missing);
}

TEST(EventLog, SurvivesReopening) {
  std::string path = ::testing::TempDir() + "cmax-event-log-test.db";
  std::remove(path.c_str());
  {
    auto log = EventLog::open(path);
    ASSERT_TRUE(log) << log.error().message;
    ASSERT_TRUE(log->save_resume_point({"boot-b", 5}));
    auto ev = log->record_event(row(5));
    ASSERT_TRUE(ev);
    ASSERT_TRUE(log->begin_action("n1|xid|79|0000:3b:00", *ev, "drain", "n1", "cmax: Xid 79", 1));
  }
  auto log = EventLog::open(path);
  ASSERT_TRUE(log);
  EXPECT_EQ((*log->resume_point())->seq, 5u);
  EXPECT_EQ(log->pending_actions()->size(), 1u);  // an intent left by a crash is still there
  std::remove(path.c_str());
}

}  // namespace
}  // namespace cmax::agent
