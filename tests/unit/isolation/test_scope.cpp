#include <gtest/gtest.h>

#include "isolation/scope.h"

using namespace cmax::isolation;

TEST(IsolationScope, ParsesAddressesAndBlocks) {
  EXPECT_EQ(parse_ipv4("10.0.0.1"), 0x0A000001u);
  EXPECT_EQ(parse_ipv4("255.255.255.255"), 0xFFFFFFFFu);
  EXPECT_FALSE(parse_ipv4("10.0.0"));
  EXPECT_FALSE(parse_ipv4("10.0.0.256"));
  EXPECT_FALSE(parse_ipv4("10.0.0.1.2"));
  EXPECT_FALSE(parse_ipv4("10..0.1"));
  EXPECT_FALSE(parse_ipv4("1000.0.0.1"));
  EXPECT_EQ(format_ipv4(0xA9FEA9FEu), "169.254.169.254");

  auto s = parse_scope("10.1.2.77/24");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->base, 0x0A010200u);  // host bits cleared
  EXPECT_EQ(s->prefix, 24);
  EXPECT_EQ(scope_host_count(*s), 254u);
  auto one = parse_scope("10.1.2.3");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->prefix, 32);
  EXPECT_EQ(scope_host_count(*one), 1u);
  EXPECT_EQ(scope_host_count(*parse_scope("10.0.0.0/31")), 2u);
  EXPECT_EQ(scope_host_count(*parse_scope("10.0.0.0/30")), 2u);
  auto name = parse_scope("node-7.cluster.local");
  ASSERT_TRUE(name);
  EXPECT_EQ(name->name, "node-7.cluster.local");
}

TEST(IsolationScope, RefusesWhatIsNotAHostWithAMessage) {
  for (const char *bad : {"224.0.0.1", "239.1.2.0/24", "255.255.255.255", "240.0.0.0/4",
                          "0.0.0.0/0", "0.1.2.3", "128.0.0.0/1"}) {
    auto s = parse_scope(bad);
    ASSERT_FALSE(s) << bad;
    EXPECT_NE(s.error().message.find("unicast"), std::string::npos) << s.error().message;
  }
  auto v6 = parse_scope("fd00::/64");
  ASSERT_FALSE(v6);
  EXPECT_NE(v6.error().message.find("IPv6"), std::string::npos);
  EXPECT_FALSE(parse_scope("10.0.0.0/33"));
  EXPECT_FALSE(parse_scope("10.0.0.0/"));
  EXPECT_FALSE(parse_scope("10.0.0.0/x"));
  EXPECT_FALSE(parse_scope("a b"));
  EXPECT_FALSE(parse_scope(""));
  EXPECT_FALSE(parse_scope("300.1.1.1"));
}

TEST(IsolationScope, ExpandsSortedUniqueWithinTheLimit) {
  std::vector<Scope> scopes = {*parse_scope("10.0.0.0/30"), *parse_scope("10.0.0.2"),
                               *parse_scope("10.0.0.9")};
  auto hosts = expand_scopes(scopes, 16);
  ASSERT_TRUE(hosts) << hosts.error().message;
  EXPECT_EQ(*hosts, (std::vector<Ipv4>{0x0A000001u, 0x0A000002u, 0x0A000009u}));
}

TEST(IsolationScope, RefusesScopesOverTheLimitBeforeExpanding) {
  auto big = expand_scopes({*parse_scope("10.0.0.0/8")}, kDefaultMaxHosts);
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message.find("--max-hosts"), std::string::npos) << big.error().message;
  EXPECT_NE(big.error().message.find("16777214"), std::string::npos) << big.error().message;
  auto together = expand_scopes({*parse_scope("10.0.0.0/24"), *parse_scope("10.0.1.0/24")}, 300);
  ASSERT_FALSE(together);
  EXPECT_NE(together.error().message.find("--max-hosts"), std::string::npos);
  EXPECT_TRUE(expand_scopes({*parse_scope("10.0.0.0/20")}, kDefaultMaxHosts));
}

TEST(IsolationScope, ResolvesNamesThroughTheGivenResolver) {
  Resolver fake = [](std::string_view name) -> cmax::Result<std::vector<Ipv4>> {
    if (name == "gpu-1") return std::vector<Ipv4>{0x0A000005u, 0x0A000001u};
    return cmax::fail("resolve --scope {}: unknown", name);
  };
  auto hosts = expand_scopes({*parse_scope("gpu-1"), *parse_scope("10.0.0.1")}, 8, fake);
  ASSERT_TRUE(hosts) << hosts.error().message;
  EXPECT_EQ(*hosts, (std::vector<Ipv4>{0x0A000001u, 0x0A000005u}));
  auto missing = expand_scopes({*parse_scope("gpu-2")}, 8, fake);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("gpu-2"), std::string::npos);
}
