// The kmsg follower on this machine's real /dev/kmsg (we are root in our own VM). Tests share the
// ring buffer with each other and with earlier runs, so each looks only for its own unique marker.

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>

#include <fmt/format.h>

#include "agent/kmsg_follow.h"
#include "support/kmsg.h"

namespace cmax::agent {
namespace {

using test::write_kmsg;

std::string unique_marker() {
  std::random_device rd;
  return fmt::format("cmax-test-{}-{:08x}", ::getpid(), rd());
}

// Reads until a record holding `marker` arrives, or 3 s pass.
std::optional<KmsgRecord> find(KmsgFollower& f, const std::string& marker) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = f.next(std::chrono::milliseconds(100));
    EXPECT_TRUE(r) << r.error().message;
    if (!r) return std::nullopt;
    if (*r && (*r)->line.find(marker) != std::string::npos) return *r;
  }
  return std::nullopt;
}

TEST(KmsgRecord, ParsesRecordsAndDropsContinuations) {
  auto r = parse_kmsg_record("6,1234,5678901,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
                             " SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->seq, 1234u);
  EXPECT_EQ(r->prio, 6);
  EXPECT_EQ(r->usec, 5678901u);
  EXPECT_TRUE(r->from_kernel());
  EXPECT_EQ(r->line, "6,1234,5678901,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.");
  auto user = parse_kmsg_record("11,7,100,-;hello");
  ASSERT_TRUE(user);
  EXPECT_FALSE(user->from_kernel());
  EXPECT_FALSE(parse_kmsg_record("not a record"));
  EXPECT_FALSE(parse_kmsg_record(""));
}

TEST(KmsgFollower, ReadsLiveRecordsAndResumesAfterASeq) {
  if (::access("/dev/kmsg", W_OK) != 0) GTEST_SKIP() << "needs root to write /dev/kmsg";
  auto f = KmsgFollower::open("/dev/kmsg", std::nullopt);
  ASSERT_TRUE(f) << f.error().message;
  const std::string first = unique_marker(), second = unique_marker();
  ASSERT_TRUE(write_kmsg("<3>" + first + "\n"));
  auto a = find(*f, first);
  ASSERT_TRUE(a) << "the record written was not read back";
  EXPECT_FALSE(a->from_kernel());  // written from userspace: facility user
  EXPECT_EQ(a->prio, 11);

  ASSERT_TRUE(write_kmsg("<3>" + second + "\n"));
  auto resumed = KmsgFollower::open("/dev/kmsg", a->seq);
  ASSERT_TRUE(resumed);
  // The first marker is at or before the resume point: only the second comes back.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  bool saw_second = false;
  while (!saw_second && std::chrono::steady_clock::now() < deadline) {
    auto r = resumed->next(std::chrono::milliseconds(100));
    ASSERT_TRUE(r);
    if (!*r) continue;
    EXPECT_GT((*r)->seq, a->seq);
    EXPECT_EQ((*r)->line.find(first), std::string::npos);
    saw_second = (*r)->line.find(second) != std::string::npos;
  }
  EXPECT_TRUE(saw_second);
}

TEST(KmsgFollower, WaitsNoLongerThanAsked) {
  auto f = KmsgFollower::open("/dev/kmsg", std::nullopt);
  ASSERT_TRUE(f);
  while (true) {  // drain what is there now
    auto r = f->next(std::chrono::milliseconds(0));
    ASSERT_TRUE(r);
    if (!*r) break;
  }
  auto t0 = std::chrono::steady_clock::now();
  auto r = f->next(std::chrono::milliseconds(150));
  auto waited = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(r);
  EXPECT_LT(waited, std::chrono::seconds(2));  // never hangs (another test may write meanwhile)
}

TEST(KmsgFollower, MissingDeviceIsAClearError) {
  auto f = KmsgFollower::open("/nonexistent/kmsg", std::nullopt);
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("/nonexistent/kmsg"), std::string::npos);
}

}  // namespace
}  // namespace cmax::agent

namespace cmax::agent {
namespace {
using namespace std::chrono_literals;

// Issue 36: a FIFO of records in /dev/kmsg's read format feeds an agent whose node is simulated
// (thousands of agents on one machine cannot share its /dev/kmsg). Several records in one write,
// continuation lines, no writer at all (never an end), and skip_to_end.
TEST(KmsgFollower, FollowsAFifoOfRecordsLikeTheDevice) {
  const std::string path = ::testing::TempDir() + fmt::format("cmax-kmsg-fifo-{}", ::getpid());
  std::remove(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  auto f = KmsgFollower::open(path, 1);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_TRUE(f->is_fifo());
  auto none = f->next(50ms);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none) << "no writer: nothing yet, not an end";
  {
    int w = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    ASSERT_GE(w, 0);
    const std::string two = "3,1,100,-;old line before the resume point\n"
                            "3,2,200,-;NVRM: Xid (PCI:0000:1b:00): 79, pid=1, name=t, GPU has fallen off the bus.\n"
                            " SUBSYSTEM=pci\n DEVICE=+pci:0000:1b:00.0\n"
                            "6,3,300,-;third\n";
    ASSERT_EQ(::write(w, two.data(), two.size()), static_cast<ssize_t>(two.size()));
    ::close(w);  // the writer goes: the follower still reads what it wrote, and no end after
  }
  auto a = f->next(200ms);
  ASSERT_TRUE(a && *a);
  EXPECT_EQ((*a)->seq, 2u) << "seq 1 is at the resume point";
  EXPECT_NE((*a)->line.find("Xid"), std::string::npos);
  EXPECT_EQ((*a)->line.find("SUBSYSTEM"), std::string::npos) << "continuation lines dropped";
  auto b = f->next(200ms);
  ASSERT_TRUE(b && *b);
  EXPECT_EQ((*b)->seq, 3u);
  EXPECT_EQ((*b)->prio, 6);
  auto after = f->next(50ms);
  ASSERT_TRUE(after);
  EXPECT_FALSE(*after);
  {
    int w = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    ASSERT_GE(w, 0);
    const std::string past = "3,4,400,-;written before the skip\n";
    ASSERT_EQ(::write(w, past.data(), past.size()), static_cast<ssize_t>(past.size()));
    ASSERT_TRUE(f->skip_to_end());
    const std::string now = "3,5,500,-;written after the skip\n";
    ASSERT_EQ(::write(w, now.data(), now.size()), static_cast<ssize_t>(now.size()));
    ::close(w);
  }
  auto c = f->next(200ms);
  ASSERT_TRUE(c && *c);
  EXPECT_EQ((*c)->seq, 5u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace cmax::agent
