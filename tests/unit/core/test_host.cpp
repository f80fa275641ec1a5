#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "core/host.h"
#include "support/temp_host.h"

using cmax::core::HostRoot;
using cmax::test::TempHost;

TEST(HostRoot, ReadsFilesUnderTheRoot) {
  TempHost t;
  t.write("/etc/os-release", "ID=debian\n");
  auto h = t.host();
  EXPECT_FALSE(h.is_live());
  auto data = h.read_file("/etc/os-release");
  ASSERT_TRUE(data);
  EXPECT_EQ(*data, "ID=debian\n");
  EXPECT_TRUE(h.exists("/etc"));
  EXPECT_FALSE(h.exists("/etc/missing"));
}

TEST(HostRoot, AbsoluteSymlinksResolveInsideTheRoot) {
  TempHost t;
  t.write("/usr/lib/os-release", "ID=inside\n");
  t.symlink("/usr/lib/os-release", "/etc/os-release");  // absolute, as on a real Debian
  t.symlink("/etc/passwd", "/etc/escape");               // must not read this machine's /etc/passwd
  auto h = t.host();
  auto data = h.read_file("/etc/os-release");
  ASSERT_TRUE(data) << data.error().message;
  EXPECT_EQ(*data, "ID=inside\n");
  EXPECT_FALSE(h.read_file("/etc/escape"));
  EXPECT_FALSE(h.read_file("/../../etc/passwd"));
}

TEST(HostRoot, RefusesOversizedFilesInsteadOfTruncating) {
  TempHost t;
  t.write("/big", std::string(5000, 'x'));
  auto h = t.host();
  auto r = h.read_file("/big", 4096);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("larger than 4096"), std::string::npos);
  auto p = h.read_prefix("/big", 100);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->size(), 100u);
}

TEST(HostRoot, NonRegularFilesAreErrorsNotHangs) {
  TempHost t;
  t.mkdir("/etc/dir");
  ASSERT_EQ(::mkfifo((t.dir() / "fifo").c_str(), 0600), 0);
  auto h = t.host();
  auto d = h.read_file("/etc/dir");
  ASSERT_FALSE(d);
  auto f = h.read_file("/fifo");  // would block forever with a plain open()
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message.find("not a regular file"), std::string::npos);
}

TEST(HostRoot, ListsDirectoriesSorted) {
  TempHost t;
  t.write("/d/b", "");
  t.write("/d/a", "");
  t.mkdir("/d/c");
  auto l = t.host().list_dir("/d");
  ASSERT_TRUE(l);
  ASSERT_EQ(l->size(), 3u);
  EXPECT_EQ((*l)[0].name, "a");
  EXPECT_TRUE((*l)[2].is_dir);
  EXPECT_FALSE(t.host().list_dir("/nope"));
}

TEST(HostRoot, LiveRootReadsProc) {
  HostRoot live("/");
  EXPECT_TRUE(live.is_live());
  auto r = live.read_file("/proc/sys/kernel/osrelease");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->empty());
}
