#pragma once
// Small rubrics and evidence sets for the score tests.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>

#include <fmt/format.h>

#include "score/evidence.h"
#include "score/rubric.h"

namespace cmax::score::test {

/// A rubric with `categories` (JSON array members, without brackets) and every other category
/// at weight 0 with no items; `tiers` likewise.
inline std::string rubric_text(const std::string& categories, const std::string& tiers =
                                   R"({"tier": "Platinum", "min_total": 90, "min_category": 70},
                                      {"tier": "Gold", "min_total": 80}, {"tier": "Silver", "min_total": 65},
                                      {"tier": "Bronze", "min_total": 50}, {"tier": "Underperform", "min_total": 0})") {
  std::string cats = categories;
  for (int i = 0; i < audit::kCategoryCount; ++i) {
    auto name = std::string(audit::to_string(static_cast<audit::Category>(i)));
    if (categories.find("\"" + name + "\"") != std::string::npos) continue;
    cats += fmt::format("{}{{\"category\": \"{}\", \"weight\": 0, \"items\": []}}", cats.empty() ? "" : ", ", name);
  }
  return fmt::format(R"({{"schema": "cmax.rubric/1", "name": "t", "version": "1", "categories": [{}], "tiers": [{}]}})",
                     cats, tiers);
}

inline Rubric make_rubric(const std::string& categories, const std::string& tiers = "") {
  auto r = tiers.empty() ? parse_rubric(rubric_text(categories), "test.json")
                         : parse_rubric(rubric_text(categories, tiers), "test.json");
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r ? *r : Rubric{};
}

inline audit::Finding finding(std::string id, audit::Category c, audit::Outcome o, std::string remediation = "") {
  audit::Finding f;
  f.title = id;
  f.check_id = std::move(id);
  f.category = c;
  f.outcome = o;
  f.remediation = std::move(remediation);
  return f;
}

/// A directory removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / fmt::format("cmax-score-{}-{}", ::getpid(), rd());
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace cmax::score::test
