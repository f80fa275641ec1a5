// drill::DevkmsgGuard on a stand-in for /proc/sys/kernel/printk_devkmsg: raised from ratelimit to
// on while alive and put back after; any other setting left alone; what it did said for the
// drill's audit record.

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "drill/inject.h"
#include "support/temp_host.h"

namespace cmax::drill {
namespace {

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s;
  in >> s;
  return s;
}

TEST(DevkmsgGuard, RatelimitIsRaisedWhileAliveAndPutBackAfter) {
  test::TempHost h;
  const auto sysctl = h.dir() / "printk_devkmsg";
  std::ofstream(sysctl) << "ratelimit\n";
  {
    auto g = DevkmsgGuard::raise(sysctl.string());
    EXPECT_EQ(read(sysctl), "on");
    EXPECT_EQ(g.note(), "printk_devkmsg was ratelimit: set on for the drill's writes, put back after");
    auto moved = std::move(g);  // the moved-from guard puts nothing back
    EXPECT_EQ(read(sysctl), "on");
  }
  EXPECT_EQ(read(sysctl), "ratelimit");
}

TEST(DevkmsgGuard, OtherSettingsAreLeftAlone) {
  test::TempHost h;
  const auto sysctl = h.dir() / "printk_devkmsg";
  for (std::string mode : {"on", "off"}) {
    std::ofstream(sysctl) << mode << "\n";
    {
      auto g = DevkmsgGuard::raise(sysctl.string());
      EXPECT_EQ(g.note(), "printk_devkmsg is " + mode + ": left alone");
      EXPECT_EQ(read(sysctl), mode);
    }
    EXPECT_EQ(read(sysctl), mode);
  }
  auto missing = DevkmsgGuard::raise((h.dir() / "none").string());
  EXPECT_EQ(missing.note(), "printk_devkmsg unreadable: left alone");
}

}  // namespace
}  // namespace cmax::drill
