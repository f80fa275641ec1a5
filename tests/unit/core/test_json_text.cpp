// append_json_string against nlohmann-json's parser: whatever the bytes, the output parses, and
// valid UTF-8 comes back unchanged.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <random>
#include <string>

#include "core/json_text.h"

namespace cmax::core {
namespace {

std::string as_json(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

TEST(JsonText, EscapesWhatJsonRequires) {
  EXPECT_EQ(as_json(""), "\"\"");
  EXPECT_EQ(as_json("plain text"), "\"plain text\"");
  EXPECT_EQ(as_json("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(as_json("\t\n\r\b\f"), "\"\\t\\n\\r\\b\\f\"");
  EXPECT_EQ(as_json(std::string_view("\x00\x01\x1f", 3)), "\"\\u0000\\u0001\\u001f\"");
  EXPECT_EQ(as_json("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
}

TEST(JsonText, InvalidUtf8BecomesReplacementCharacters) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(as_json("a\xff" "b"), "\"a" + r + "b\"");
  EXPECT_EQ(as_json("\xc0\xaf"), "\"" + r + r + "\"");          // overlong '/'
  EXPECT_EQ(as_json("\xed\xa0\x80"), "\"" + r + r + r + "\"");  // a surrogate
  EXPECT_EQ(as_json("\xf4\x90\x80\x80"), "\"" + r + r + r + r + "\"");  // past U+10FFFF
  EXPECT_EQ(as_json("ok\xe2\x82"), "\"ok" + r + r + "\"");      // cut off at the end
}

TEST(JsonText, RandomBytesAlwaysParseAndValidTextRoundTrips) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string s(rng() % 40, '\0');
    for (auto& c : s) c = static_cast<char>(rng() % 4 ? rng() % 128 : rng() % 256);
    std::string text = as_json(s);
    nlohmann::json j;
    ASSERT_NO_THROW(j = nlohmann::json::parse(text)) << text;
    ASSERT_TRUE(j.is_string());
    // Valid UTF-8 in, the same string out (nlohmann's strict dump throws on invalid UTF-8).
    bool valid = true;
    try {
      (void)nlohmann::json(s).dump();
    } catch (const nlohmann::json::exception&) {
      valid = false;
    }
    if (valid) {
      EXPECT_EQ(j.get<std::string>(), s);
    }
  }
}

}  // namespace
}  // namespace cmax::core
