#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "score/rubric.h"
#include "score_test_util.h"

namespace cmax::score {
namespace {

using test::make_rubric;
using test::rubric_text;

std::string error_of(const std::string& text) {
  auto r = parse_rubric(text, "r.json");
  EXPECT_FALSE(r);
  return r ? std::string() : r.error().message;
}

TEST(Rubric, BuiltInParsesAndEqualsTheDataFile) {
  auto built = load_rubric(std::nullopt);
  ASSERT_TRUE(built) << built.error().message;
  EXPECT_EQ(built->origin, "built-in");
  ASSERT_EQ(built->categories.size(), 10u);
  auto file = load_rubric(std::string(CMAX_SOURCE_DIR) + "/data/rubric.json");
  ASSERT_TRUE(file) << file.error().message;
  double a = 0, b = 0;
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(built->categories[i].category, static_cast<audit::Category>(i));
    a += built->categories[i].weight;
    b += file->categories[i].weight;
    EXPECT_EQ(built->categories[i].items.size(), file->categories[i].items.size());
  }
  EXPECT_DOUBLE_EQ(a, b);
  ASSERT_EQ(built->tiers.size(), 5u);
  EXPECT_EQ(built->tiers.front().name, "Platinum");
  EXPECT_EQ(built->tiers.back().name, "Underperform");
}

TEST(Rubric, ParsesItems) {
  auto r = make_rubric(R"({"category": "networking", "weight": 3, "items": [
      {"id": "n.f", "weight": 2, "source": "findings", "category": "networking", "prefixes": ["networking."],
       "exclude_prefixes": ["networking.x"]},
      {"id": "n.m", "weight": 1, "source": "metric", "metric": "nccl.pass_fraction", "points": [[0, 0], [1, 100]]}]})");
  const auto& net = r.categories[static_cast<int>(audit::Category::networking)];
  EXPECT_EQ(net.weight, 3);
  ASSERT_EQ(net.items.size(), 2u);
  EXPECT_EQ(net.items[0].source, Source::findings);
  EXPECT_EQ(net.items[0].title, "n.f");
  EXPECT_EQ(net.items[1].points.size(), 2u);
  EXPECT_TRUE(item_matches(net.items[0], test::finding("networking.a", audit::Category::networking, audit::Outcome::pass)));
  EXPECT_FALSE(item_matches(net.items[0], test::finding("networking.xy", audit::Category::networking, audit::Outcome::pass)));
  EXPECT_FALSE(item_matches(net.items[0], test::finding("networking.a", audit::Category::storage, audit::Outcome::pass)));
  EXPECT_FALSE(item_matches(net.items[0], test::finding("storage.a", audit::Category::networking, audit::Outcome::pass)));
}

TEST(Rubric, MapPointsIsPiecewiseLinearAndClamped) {
  std::vector<std::pair<double, double>> p = {{0.5, 0}, {0.75, 40}, {0.99, 100}};
  EXPECT_DOUBLE_EQ(map_points(p, 0.2), 0);
  EXPECT_DOUBLE_EQ(map_points(p, 0.75), 40);
  EXPECT_NEAR(map_points(p, 0.87), 70, 1e-9);
  EXPECT_DOUBLE_EQ(map_points(p, 1.0), 100);
  std::vector<std::pair<double, double>> down = {{60, 100}, {300, 50}, {900, 0}};
  EXPECT_NEAR(map_points(down, 180), 75, 1e-9);
  EXPECT_DOUBLE_EQ(map_points(down, std::numeric_limits<double>::infinity()), 0);
}

TEST(Rubric, ErrorsNameTheJsonPath) {
  EXPECT_NE(error_of("{").find("r.json: not JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"schema": "cmax.rubric/2"})").find("schema"), std::string::npos);
  std::string e = error_of(rubric_text(
      R"({"category": "security", "weight": 1, "items": [{"id": "a", "weight": 1, "source": "metric", "metric": "nope", "points": [[0, 0], [1, 100]]}]})"));
  EXPECT_NE(e.find("r.json: categories[0].items[0].metric: unknown metric \"nope\""), std::string::npos) << e;
  e = error_of(rubric_text(
      R"({"category": "security", "weight": 1, "items": [{"id": "a", "weight": 1, "source": "metric", "metric": "nccl.pass_fraction", "points": [[1, 0], [0.5, 100]]}]})"));
  EXPECT_NE(e.find("categories[0].items[0].points[1][0]: values must increase"), std::string::npos) << e;
  e = error_of(rubric_text(
      R"({"category": "security", "weight": 1, "items": [{"id": "a", "weight": 1, "source": "metric", "metric": "nccl.pass_fraction", "points": [[0, 0], [1, 120]]}]})"));
  EXPECT_NE(e.find("points[1][1]"), std::string::npos) << e;
  e = error_of(rubric_text(R"({"category": "security", "weight": -1, "items": []})"));
  EXPECT_NE(e.find("categories[0].weight"), std::string::npos) << e;
  e = error_of(rubric_text(R"({"category": "security", "weight": 1, "items": [{"id": "a", "weight": 0, "source": "findings"}]})"));
  EXPECT_NE(e.find("categories[0].items[0].weight: must be greater than 0"), std::string::npos) << e;
  e = error_of(rubric_text(R"({"category": "security", "weight": 1, "items": [{"id": "a", "weight": 1, "source": "guess"}]})"));
  EXPECT_NE(e.find("categories[0].items[0].source"), std::string::npos) << e;
  e = error_of(rubric_text(R"({"category": "securty", "weight": 1, "items": []})"));
  EXPECT_NE(e.find("unknown category \"securty\""), std::string::npos) << e;
  e = error_of(rubric_text(R"({"category": "security", "weight": 1, "items": [
      {"id": "a", "weight": 1, "source": "findings"}, {"id": "a", "weight": 1, "source": "findings"}]})"));
  EXPECT_NE(e.find("categories[0].items[1].id: \"a\" is used twice"), std::string::npos) << e;
  e = error_of(rubric_text(R"({"category": "security", "weight": 1, "items": []})",
                           R"({"tier": "A", "min_total": 50}, {"tier": "B", "min_total": 60}, {"tier": "C", "min_total": 0})"));
  EXPECT_NE(e.find("tiers[1].min_total"), std::string::npos) << e;
  e = error_of(rubric_text(R"({"category": "security", "weight": 1, "items": []})", R"({"tier": "A", "min_total": 50})"));
  EXPECT_NE(e.find("tiers[0]: the last tier must take every total"), std::string::npos) << e;
  // A category left out entirely.
  auto j = nlohmann::json::parse(rubric_text(R"({"category": "security", "weight": 1, "items": []})"));
  j["categories"].erase(j["categories"].size() - 1);
  e = error_of(j.dump());
  EXPECT_NE(e.find("categories: category \"availability\" is missing"), std::string::npos) << e;
}

TEST(Rubric, LoadNamesAMissingFile) {
  auto r = load_rubric(std::string("/nonexistent/rubric.json"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("open rubric /nonexistent/rubric.json"), std::string::npos);
}

}  // namespace
}  // namespace cmax::score
