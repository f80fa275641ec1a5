// Thresholds: the built-in table (data/health-thresholds.json, embedded) has a bound for every
// active check, and a bad file is refused with an error that names the file, the key and the fix.

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "health/active.h"

namespace cmax::health {
namespace {

std::string error_of(std::string_view text) {
  auto t = Thresholds::parse(text, "test.json");
  return t ? std::string("(parsed)") : t.error().message;
}

constexpr std::string_view kHead = R"({"schema": "cmax.health-thresholds/1", "thresholds": )";

std::string doc(std::string_view thresholds) {
  return std::string(kHead) + std::string(thresholds) + "}";
}

TEST(Thresholds, BuiltinHasABoundForEveryActiveCheck) {
  auto t = Thresholds::builtin();
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->origin(), "built-in data/health-thresholds.json");
  const std::pair<const char*, double> expected[] = {
      {"storage.metadata.p99_us.warn_max", 2000},
      {"storage.metadata.p99_us.max", 20000},
      {"storage.metadata.files_per_s.warn_min", 1000},
      {"storage.metadata.files_per_s.min", 200},
      {"storage.seq_write.gbps.min", 0.2},
      {"storage.seq_write.gbps.warn_min", 1},
      {"storage.seq_read.gbps.min", 0.2},
      {"storage.seq_read.gbps.warn_min", 1},
      {"storage.fsync.p99_ms.warn_max", 10},
      {"storage.fsync.p99_ms.max", 100},
      {"memory.bandwidth.fraction_of_ceiling.warn_min", 0.6},
      {"memory.bandwidth.fraction_of_ceiling.min", 0.4},
      {"cpu.throughput.slowest_core_fraction.warn_min", 0.85},
      {"cpu.throughput.slowest_core_fraction.min", 0.7},
      {"cpu.stall.max_wakeup_ms.warn_max", 20},
      {"cpu.stall.max_wakeup_ms.max", 200},
  };
  for (const auto& [key, value] : expected) {
    auto v = t->get(key);
    ASSERT_TRUE(v.has_value()) << key;
    EXPECT_DOUBLE_EQ(*v, value) << key;
  }
  // Every check of the table has at least one bound.
  for (const auto& c : all_active_checks()) {
    bool any = false;
    for (const auto& [key, value] : t->values()) any |= key.starts_with(std::string(c.id) + ".");
    EXPECT_TRUE(any) << c.id << " has no threshold in data/health-thresholds.json";
  }
  EXPECT_FALSE(t->get("storage.metadata.p99_us").has_value()) << "keys end in a bound";
}

TEST(Thresholds, ParsesBoundsAndIgnoresDocumentation) {
  auto t = Thresholds::parse(
      doc(R"({"a.b.c": {"min": 1, "warn_min": 2, "warn_max": 3, "max": 4, "unit": "x", "doc": "y"}})"),
      "mine.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->origin(), "mine.json");
  EXPECT_EQ(t->values().size(), 4u);
  EXPECT_EQ(t->get("a.b.c.min"), 1.0);
  EXPECT_EQ(t->get("a.b.c.warn_min"), 2.0);
  EXPECT_EQ(t->get("a.b.c.warn_max"), 3.0);
  EXPECT_EQ(t->get("a.b.c.max"), 4.0);
  EXPECT_FALSE(t->get("a.b.c.unit"));
  auto copy = *t;
  copy.set("a.b.c.max", 10);
  EXPECT_EQ(copy.get("a.b.c.max"), 10.0);
  EXPECT_EQ(t->get("a.b.c.max"), 4.0);
}

TEST(Thresholds, EmptyTableIsValid) {
  auto t = Thresholds::parse(doc("{}"), "empty.json");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_TRUE(t->values().empty());
}

TEST(Thresholds, ErrorsNameTheFileTheKeyAndTheFix) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const Case cases[] = {
      {"{not json", "read health thresholds test.json: not valid JSON; fix the file"},
      {R"({"thresholds": {}})", "\"schema\" must be \"cmax.health-thresholds/1\""},
      {R"({"schema": "cmax.health-thresholds/2", "thresholds": {}})", "\"schema\" must be"},
      {R"({"schema": "cmax.health-thresholds/1"})", "\"thresholds\" must be an object"},
      {R"({"schema": "cmax.health-thresholds/1", "thresholds": []})", "\"thresholds\" must be an object"},
      {doc(R"({"p99": {"max": 1}})"), "key 'p99' must be '<check id>.<measurement>'"},
      {doc(R"({"a.b": 5})"), "'a.b' must be an object with min, max, warn_min or warn_max"},
      {doc(R"({"a.b": {"mx": 5}})"), "'a.b' has an unknown member 'mx'; use min, max, warn_min, warn_max"},
      {doc(R"({"a.b": {"max": "5"}})"), "'a.b.max' must be a number, got \"5\""},
      {doc(R"({"a.b": {"doc": 5}})"), "'a.b.doc' must be a string"},
      {doc(R"({"a.b": {"min": 5, "max": 1}})"), "'a.b': min 5 is above max 1"},
      {doc(R"({"a.b": {"max": 5, "warn_max": 6}})"), "'a.b': warn_max 6 is above max 5"},
      {doc(R"({"a.b": {"min": 5, "warn_min": 4}})"), "'a.b': warn_min 4 is below min 5"},
  };
  for (const auto& c : cases) {
    std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.expected), std::string::npos) << c.text << "\n -> " << e;
    EXPECT_NE(e.find("test.json"), std::string::npos) << e;
  }
}

TEST(Thresholds, LoadFileReadsAFileAndNamesAMissingOne) {
  auto missing = Thresholds::load_file("/nonexistent/cmax-thresholds.json");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            "read health thresholds /nonexistent/cmax-thresholds.json: cannot open the file; check "
            "the --thresholds path");

  std::string path = std::filesystem::temp_directory_path() / ("cmax-thresholds-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << doc(R"({"storage.fsync.p99_ms": {"max": 50}})");
  auto t = Thresholds::load_file(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->origin(), path);
  EXPECT_EQ(t->get("storage.fsync.p99_ms.max"), 50.0);
}

TEST(Thresholds, TheShippedFileIsTheBuiltInOne) {
  auto file = Thresholds::load_file(std::string(CMAX_SOURCE_DIR) + "/data/health-thresholds.json");
  ASSERT_TRUE(file) << file.error().message;
  auto builtin = Thresholds::builtin();
  ASSERT_TRUE(builtin);
  EXPECT_EQ(file->values(), builtin->values());
}

}  // namespace
}  // namespace cmax::health
