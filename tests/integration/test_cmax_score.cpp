// cmax score on a real run directory of this machine: the cmax.score/1 shape, and the acceptance
// test of issue 10: a rubric file with one weight changed changes the total without recompiling.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>

#include "core/process.h"
#include "support/temp_host.h"

using nlohmann::json;

namespace {

struct Run {
  int code;
  std::string out, err;
};

Run run_cmax(std::vector<std::string> args) {
  args.insert(args.begin(), CMAX_BIN);
  auto r = cmax::core::run_process({args, std::chrono::seconds(120), 16u << 20});
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  if (!r) return {-1, "", ""};
  EXPECT_FALSE(r->timed_out);
  return {r->exit_code, r->out, r->err};
}

void validate_score_shape(const json& j, std::size_t runs) {
  ASSERT_EQ(j.at("schema"), "cmax.score/1");
  ASSERT_TRUE(j.at("rubric").at("origin").is_string());
  ASSERT_EQ(j.at("runs").size(), runs);
  const std::set<std::string> tiers = {"Platinum", "Gold", "Silver", "Bronze", "Underperform", "not rated", "no tier"};
  for (const auto& r : j["runs"]) {
    EXPECT_TRUE(r.at("label").is_string());
    EXPECT_TRUE(r.at("total").is_number() || r.at("total").is_null());
    double conf = r.at("confidence").get<double>();
    EXPECT_GE(conf, 0);
    EXPECT_LE(conf, 1);
    EXPECT_TRUE(tiers.count(r.at("tier").get<std::string>())) << r["tier"];
    EXPECT_FALSE(r.at("tier_reasons").empty());
    EXPECT_TRUE(r.at("documents").is_array());
    EXPECT_EQ(r["documents"][0], "results.json");
    for (const auto& s : r.at("move_up")) {
      EXPECT_TRUE(s.at("kind") == "fix" || s.at("kind") == "evidence");
      EXPECT_FALSE(s.at("text").get<std::string>().empty());
      EXPECT_GE(s.at("gain").get<double>(), 0);
    }
    ASSERT_EQ(r.at("categories").size(), 10u);
    for (const auto& c : r["categories"]) {
      bool evaluated = c.at("evaluated").get<bool>();
      EXPECT_EQ(evaluated, c.at("score").is_number()) << c["category"];
      if (evaluated) {
        EXPECT_GE(c["score"].get<double>(), 0);
        EXPECT_LE(c["score"].get<double>(), 100);
        EXPECT_GT(c["confidence"].get<double>(), 0);
      } else {
        EXPECT_EQ(c["confidence"].get<double>(), 0) << "no evidence at all: not evaluated, confidence 0";
      }
      for (const auto& it : c.at("items")) {
        EXPECT_EQ(it.at("present").get<bool>(), it.at("points").is_number());
        EXPECT_FALSE(it.at("reason").get<std::string>().empty());
      }
    }
  }
  ASSERT_EQ(j.at("ranking").size(), runs);
}

TEST(CmaxScore, ScoresARunDirectoryAndTheRubricIsData) {
  cmax::test::TempHost t;
  auto dir = (t.dir() / "run").string();
  auto r = run_cmax({"run", "--stage", "audit", "--harness", "standalone", "--out", dir});
  ASSERT_NE(r.code, 3) << r.err;

  auto a = run_cmax({"score", dir, "--json"});
  ASSERT_EQ(a.code, 0) << a.err;
  auto ja = json::parse(a.out);
  validate_score_shape(ja, 1);
  EXPECT_EQ(ja["rubric"]["origin"], "built-in");
  ASSERT_TRUE(ja["runs"][0]["total"].is_number()) << "this machine's audit evaluates at least one category";
  // Pricing and Partnerships have no evidence in a plain run: not evaluated, never 0.
  for (const auto& c : ja["runs"][0]["categories"]) {
    if (c["category"] == "pricing" || c["category"] == "partnerships") {
      EXPECT_FALSE(c["evaluated"].get<bool>()) << c["category"];
    }
  }

  // One weight changed in a copy of data/rubric.json: the evaluated category with the highest score
  // gets a much larger weight, which moves the total unless every category scores the same.
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/data/rubric.json");
  auto rubric = json::parse(in);
  std::string top, bottom;
  double top_score = -1, bottom_score = 101;
  for (const auto& c : ja["runs"][0]["categories"]) {
    if (!c["evaluated"].get<bool>()) continue;
    double s = c["score"].get<double>();
    if (s > top_score) {
      top_score = s;
      top = c["category"].get<std::string>();
    }
    if (s < bottom_score) {
      bottom_score = s;
      bottom = c["category"].get<std::string>();
    }
  }
  if (top_score == bottom_score) GTEST_SKIP() << "every evaluated category scores " << top_score;
  for (auto& c : rubric["categories"])
    if (c["category"] == top) c["weight"] = c["weight"].get<double>() * 10;
  auto path = (t.dir() / "rubric.json").string();
  std::ofstream(path) << rubric.dump(2);

  auto b = run_cmax({"score", dir, "--json", "--rubric", path});
  ASSERT_EQ(b.code, 0) << b.err;
  auto jb = json::parse(b.out);
  validate_score_shape(jb, 1);
  EXPECT_EQ(jb["rubric"]["origin"], path);
  EXPECT_GT(jb["runs"][0]["total"].get<double>(), ja["runs"][0]["total"].get<double>());

  // The terminal form, and two directories side by side.
  auto text = run_cmax({"score", dir});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("tier"), std::string::npos);
  auto two = run_cmax({"score", dir, dir, "--json"});
  ASSERT_EQ(two.code, 0) << two.err;
  auto j2 = json::parse(two.out);
  validate_score_shape(j2, 2);
  EXPECT_TRUE(j2["ranking"][0]["tie"].get<bool>());
}

TEST(CmaxScore, UsageErrors) {
  cmax::test::TempHost t;
  auto r = run_cmax({"score", t.dir().string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("results.json"), std::string::npos) << r.err;
  auto bad = (t.dir() / "bad.json").string();
  std::ofstream(bad) << R"({"schema": "cmax.rubric/1", "categories": []})";
  auto dir = (t.dir() / "run").string();
  ASSERT_NE(run_cmax({"run", "--stage", "audit", "--harness", "standalone", "--out", dir}).code, 3);
  auto b = run_cmax({"score", dir, "--rubric", bad});
  EXPECT_EQ(b.code, 3);
  EXPECT_NE(b.err.find("bad.json: categories"), std::string::npos) << b.err;
}

}  // namespace
