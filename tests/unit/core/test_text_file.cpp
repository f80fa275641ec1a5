// read_text_file: a user-named file read whole, with its bound; pipes are fine.

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "core/text_file.h"

namespace {

std::filesystem::path scratch(const char* name) {
  auto p = std::filesystem::temp_directory_path() / (std::string("cmax-text-file-") + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove(p);
  return p;
}

}  // namespace

TEST(TextFile, ReadsWholeFilesAndRefusesPastTheBoundWithTheHint) {
  const auto p = scratch("plain");
  std::ofstream(p) << std::string(3u << 20, 'x');
  auto all = cmax::core::read_text_file(p.string(), 4u << 20);
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->size(), 3u << 20);
  auto big = cmax::core::read_text_file(p.string(), 2u << 20, "; split it");
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().message, "read " + p.string() + ": larger than 2 MiB; split it");
  std::filesystem::remove(p);
  auto missing = cmax::core::read_text_file(p.string(), 1u << 20);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("open " + p.string()), std::string::npos);
}

TEST(TextFile, APipeIsReadToItsEnd) {
  const auto p = scratch("fifo");
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(p) << "one\ntwo\n"; });
  auto r = cmax::core::read_text_file(p.string(), 1u << 20);
  writer.join();
  std::filesystem::remove(p);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "one\ntwo\n");
}
