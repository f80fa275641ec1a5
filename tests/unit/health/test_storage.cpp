// The storage checks, for real, on a temporary directory of this machine (small sizes, so they are
// quick): the numbers are there and sane, bounds decide the outcome, nothing is left behind, and a
// path that cannot be used is unverified, never a pass.

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "health/active.h"

namespace cmax::health {
namespace {

namespace fs = std::filesystem;
using audit::Outcome;

class TempDir {
 public:
  explicit TempDir(const fs::path& parent = fs::temp_directory_path()) {
    std::string tmpl = (parent / "cmax-storage-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) dir_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return dir_; }
  bool empty() const { return fs::is_empty(dir_); }

 private:
  fs::path dir_;
};

ActiveOptions small(const fs::path& dir) {
  ActiveOptions o;
  o.storage_path = dir.string();
  o.metadata_files = 200;
  o.seq_bytes = 8u << 20;
  o.fsync_count = 20;
  return o;
}

Thresholds builtin() {
  auto t = Thresholds::builtin();
  if (!t) throw std::runtime_error(t.error().message);
  return std::move(*t);
}

const Measurement* find(const CheckResult& r, std::string_view name) {
  for (const auto& m : r.measurements)
    if (m.name == name) return &m;
  return nullptr;
}

// Measured and judged. Any verdict: on a machine shared with builds the disk can be slow enough
// to fail a bound; never unverified or not applicable.
void expect_judged(const CheckResult& r) {
  EXPECT_TRUE(r.outcome == Outcome::pass || r.outcome == Outcome::warn || r.outcome == Outcome::fail)
      << r.id << ": " << audit::to_string(r.outcome) << ": " << r.reason;
  if (r.outcome != Outcome::pass) {
    EXPECT_NE(r.reason.find("bound"), std::string::npos) << r.reason;
  }
  EXPECT_FALSE(r.timed_out);
  EXPECT_GT(r.duration_s, 0);
  EXPECT_EQ(r.category, audit::Category::storage);
  EXPECT_FALSE(r.title.empty());
  EXPECT_FALSE(r.summary.empty());
}

TEST(StorageChecks, MetadataWalksASitePackagesTreeAndRemovesIt) {
  TempDir dir;
  auto r = check_storage_metadata(small(dir.path()), builtin());
  expect_judged(r);
  EXPECT_EQ(r.id, "storage.metadata");
  EXPECT_EQ(r.target, dir.path().string());
  auto* p99 = find(r, "p99_us");
  auto* p50 = find(r, "p50_us");
  auto* rate = find(r, "files_per_s");
  auto* files = find(r, "files");
  ASSERT_TRUE(p99 && p50 && rate && files) << r.summary;
  EXPECT_EQ(files->value, 200);
  EXPECT_GT(p50->value, 0);
  EXPECT_GE(p99->value, p50->value);
  EXPECT_GT(rate->value, 0);
  EXPECT_EQ(p99->max, 20000.0) << "held to the fail bound";
  EXPECT_EQ(rate->min, 200.0);
  EXPECT_NE(r.summary.find("200 files in 10 dirs"), std::string::npos) << r.summary;
  EXPECT_TRUE(dir.empty()) << "the tree was not removed";
}

TEST(StorageChecks, BoundsDecideTheOutcome) {
  TempDir dir;
  auto t = builtin();
  t.set("storage.metadata.p99_us.max", 1e-6);
  auto r = check_storage_metadata(small(dir.path()), t);
  EXPECT_EQ(r.outcome, Outcome::fail) << r.reason;
  EXPECT_NE(r.reason.find("is above the fail bound"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("storage.metadata.p99_us.max"), std::string::npos) << r.reason;

  t = builtin();
  t.set("storage.fsync.p99_ms.warn_max", 1e-9);
  r = check_storage_fsync(small(dir.path()), t);
  EXPECT_EQ(r.outcome, Outcome::warn) << r.reason;
  EXPECT_NE(r.reason.find("above the warn bound"), std::string::npos) << r.reason;
  EXPECT_TRUE(dir.empty());
}

TEST(StorageChecks, SequentialWriteAndRead) {
  TempDir dir;
  auto w = check_storage_seq_write(small(dir.path()), builtin());
  expect_judged(w);
  auto* gbps = find(w, "gbps");
  ASSERT_TRUE(gbps);
  EXPECT_GT(gbps->value, 0);
  EXPECT_EQ(find(w, "bytes")->value, 8 << 20);
  EXPECT_TRUE(dir.empty());

  auto r = check_storage_seq_read(small(dir.path()), builtin());
  expect_judged(r);
  gbps = find(r, "gbps");
  ASSERT_TRUE(gbps);
  EXPECT_GT(gbps->value, 0);
  EXPECT_EQ(find(r, "bytes")->value, 8 << 20);
  EXPECT_NE(r.reason.find("page cache"), std::string::npos) << "the read says what may have served it";
  EXPECT_TRUE(dir.empty());
}

TEST(StorageChecks, ReadFromAMemoryFilesystemSaysTheCacheServedIt) {
  if (::access("/dev/shm", W_OK) != 0) GTEST_SKIP() << "no writable /dev/shm";
  TempDir dir("/dev/shm");
  auto r = check_storage_seq_read(small(dir.path()), builtin());
  ASSERT_NE(find(r, "cached_fraction"), nullptr) << r.reason;
  EXPECT_GT(find(r, "cached_fraction")->value, 0.9);
  EXPECT_NE(r.reason.find("still in this node's page cache"), std::string::npos) << r.reason;
}

TEST(StorageChecks, FsyncTimesEveryWrite) {
  TempDir dir;
  auto r = check_storage_fsync(small(dir.path()), builtin());
  expect_judged(r);
  auto* p99 = find(r, "p99_ms");
  ASSERT_TRUE(p99);
  EXPECT_GT(p99->value, 0);
  EXPECT_GE(find(r, "max_ms")->value, p99->value);
  EXPECT_LE(find(r, "p50_ms")->value, p99->value);
  EXPECT_EQ(find(r, "count")->value, 20);
  EXPECT_TRUE(dir.empty());
}

TEST(StorageChecks, NoPathIsNotApplicable) {
  ActiveOptions o;
  for (auto fn : {check_storage_metadata, check_storage_seq_write, check_storage_seq_read,
                  check_storage_fsync}) {
    auto r = fn(o, builtin());
    EXPECT_EQ(r.outcome, Outcome::not_applicable) << r.id;
    EXPECT_NE(r.reason.find("no --path given"), std::string::npos) << r.reason;
    EXPECT_TRUE(r.measurements.empty());
  }
}

TEST(StorageChecks, APathThatCannotBeUsedIsUnverifiedNotAFinding) {
  TempDir dir;
  ActiveOptions o = small(dir.path() / "does-not-exist");
  auto r = check_storage_seq_write(o, builtin());
  EXPECT_EQ(r.outcome, Outcome::unverified) << r.reason;
  EXPECT_NE(r.reason.find("create a scratch directory under"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("No such file or directory; give a --path"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace cmax::health
