// `cmax endpoint bench --header` and `--extra-body` (loadgen/runner.h): what is accepted, what is
// refused and why, and how the body is merged.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "loadgen/runner.h"

namespace {

using json = nlohmann::json;
using cmax::loadgen::header_name;
using cmax::loadgen::parse_extra_body;

TEST(RequestOptions, ExtraBodyIsAnObjectMergedOverCmaxsFieldsExceptTheOnesCmaxMustSet) {
  auto e = parse_extra_body(R"({"temperature":0,"max_tokens":3,"chat_template_kwargs":{"enable_thinking":false}})");
  ASSERT_TRUE(e) << e.error().message;
  cmax::loadgen::RunConfig rc;
  rc.model = "m";
  rc.extra_body = *e;
  cmax::loadgen::RequestSpec spec;
  spec.messages.push_back({"user", "hi"});
  spec.max_tokens = 16;
  auto body = json::parse(cmax::loadgen::request_body(spec, rc));
  EXPECT_EQ(body["max_tokens"], 3) << "the user's value wins";
  EXPECT_EQ(body["temperature"], 0);
  EXPECT_EQ(body["chat_template_kwargs"]["enable_thinking"], false);
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["messages"][0]["content"], "hi");

  EXPECT_FALSE(parse_extra_body("temperature=0"));
  auto arr = parse_extra_body("[1]");
  ASSERT_FALSE(arr);
  EXPECT_NE(arr.error().message.find("object"), std::string::npos);
  for (const char* own : {R"({"stream":false})", R"({"model":"x"})", R"({"messages":[]})", R"({"stream_options":{}})"}) {
    auto r = parse_extra_body(own);
    ASSERT_FALSE(r) << own;
    EXPECT_NE(r.error().message.find("set by cmax"), std::string::npos) << r.error().message;
  }
}

TEST(RequestOptions, HeadersAreNameColonValueWithATokenNameAndNoLineBreak) {
  EXPECT_EQ(*header_name("x-session-id: conv-7"), "x-session-id");
  EXPECT_EQ(*header_name("Authorization: Bearer sk-1"), "Authorization");
  EXPECT_FALSE(header_name("no colon here"));
  EXPECT_FALSE(header_name(": empty name"));
  EXPECT_FALSE(header_name("bad name: x"));
  EXPECT_FALSE(header_name("x-a: b\r\nx-injected: c"));
  auto own = header_name("Content-Length: 5");
  ASSERT_FALSE(own);
  EXPECT_NE(own.error().message.find("transport"), std::string::npos);
}

}  // namespace

TEST(RequestOptions, ASessionIdIsTheSameOnEveryTurnOfAConversationAndAbsentWithoutOne) {
  cmax::loadgen::RunConfig rc;
  rc.model = "m";
  rc.seed = 7;
  rc.session_user = true;
  cmax::loadgen::RequestSpec turn0, turn3, other, none;
  turn0.session = turn3.session = 3;
  turn3.turn = 3;
  other.session = 4;
  for (auto* s : {&turn0, &turn3, &other, &none}) s->messages.push_back({"user", "hi"});
  EXPECT_EQ(cmax::loadgen::session_id(turn0, rc), "cmax-7-3");
  EXPECT_EQ(cmax::loadgen::session_id(turn3, rc), "cmax-7-3");
  EXPECT_EQ(cmax::loadgen::session_id(other, rc), "cmax-7-4");
  EXPECT_EQ(cmax::loadgen::session_id(none, rc), "") << "a trace request has no session";
  EXPECT_EQ(json::parse(cmax::loadgen::request_body(turn3, rc))["user"], "cmax-7-3");
  EXPECT_FALSE(json::parse(cmax::loadgen::request_body(none, rc)).contains("user"));
  rc.session_user = false;
  EXPECT_FALSE(json::parse(cmax::loadgen::request_body(turn3, rc)).contains("user")) << "only when asked";
  // --extra-body's own `user` wins, as every field it names does.
  rc.session_user = true;
  rc.extra_body = R"({"user":"mine"})";
  EXPECT_EQ(json::parse(cmax::loadgen::request_body(turn3, rc))["user"], "mine");
}
