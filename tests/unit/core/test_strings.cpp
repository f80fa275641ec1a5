#include <gtest/gtest.h>

#include "core/clock.h"
#include "core/strings.h"

using namespace cmax::core;

TEST(Strings, KeyValueLines) {
  auto kv = parse_key_value("  NCCL_ALGO = Ring  ");
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->key, "NCCL_ALGO");
  EXPECT_EQ(kv->value, "Ring");
  EXPECT_FALSE(parse_key_value("# comment=1"));
  EXPECT_FALSE(parse_key_value("=value"));
  EXPECT_FALSE(parse_key_value("novalue"));
  EXPECT_EQ(unquote("\"3\""), "3");
  EXPECT_EQ(unquote("'x"), "'x");
}

TEST(Strings, SplitAndNumbers) {
  EXPECT_EQ(split_lines("a\r\nb\n").size(), 2u);
  EXPECT_EQ(split_any("a  b:c", " :").size(), 3u);
  EXPECT_EQ(parse_uint("0x10de", 16), 0x10deu);
  EXPECT_EQ(parse_uint(" 42\n"), 42u);
  EXPECT_FALSE(parse_uint("42x"));
  EXPECT_EQ(parse_int("-1"), -1);
  EXPECT_TRUE(contains_icase("NVIDIA UNIX Open Kernel Module", "open kernel module"));
  EXPECT_EQ(clip("abcdef", 3), "abc...");
  EXPECT_EQ(one_line("HTTP/1.1 401\r\nA:\tb\n"), "HTTP/1.1 401  A: b ");
  EXPECT_EQ(one_line("a\nbcdef", 4), "a bc...");
}

TEST(Clock, FormatsUtc) {
  FixedClock c(std::chrono::sys_days(std::chrono::year(2026) / 12 / 2) + std::chrono::hours(12) +
               std::chrono::minutes(21) + std::chrono::seconds(22));
  EXPECT_EQ(format_utc(c.now()), "2026-12-02T12:21:22Z");
  EXPECT_EQ(format_utc_compact(c.now()), "20261202T122122Z");
}

TEST(Strings, UrlOriginIsSchemeHostAndPort) {
  EXPECT_EQ(url_origin("https://a.b:8443/v1/x"), "https://a.b:8443");
  EXPECT_EQ(url_origin("http://127.0.0.1:8000/v1"), "http://127.0.0.1:8000");
  EXPECT_EQ(url_origin("http://host"), "http://host");
  EXPECT_EQ(url_origin("host/path"), "host");
}
