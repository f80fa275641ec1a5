// FlatIndex against std::multimap as the model: random assigns, finds and erases with deliberately
// colliding hashes (the caller's check tells keys apart), through growth and tombstones.

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "signals/flat_index.h"

namespace cmax::signals {
namespace {

TEST(FlatIndex, BehavesLikeAMapUnderCollisionsAndErases) {
  std::mt19937_64 rng(3);
  FlatIndex index;
  std::map<std::uint32_t, std::uint32_t> model;  // key -> value
  std::vector<std::uint32_t> key_of_value(1, 0);  // the "incident" each value names: its key
  auto hash = [](std::uint32_t key) { return std::uint64_t{key % 97}; };  // many keys share a hash
  for (int step = 0; step < 200000; ++step) {
    const std::uint32_t key = static_cast<std::uint32_t>(rng() % 3000);
    auto same = [&](std::uint32_t v) { return key_of_value[v] == key; };
    switch (rng() % 3) {
      case 0: {  // assign a new value for the key
        const auto v = static_cast<std::uint32_t>(key_of_value.size());
        key_of_value.push_back(key);
        index.assign(hash(key), v, same);
        model[key] = v;
        break;
      }
      case 1: {
        auto got = index.find(hash(key), same);
        auto it = model.find(key);
        ASSERT_EQ(got.has_value(), it != model.end()) << "step " << step;
        if (got) {
          ASSERT_EQ(*got, it->second);
        }
        break;
      }
      case 2:
        ASSERT_EQ(index.erase(hash(key), same), model.erase(key) == 1) << "step " << step;
        break;
    }
  }
  index.clear();
  EXPECT_FALSE(index.find(0, [](std::uint32_t) { return true; }));
}

}  // namespace
}  // namespace cmax::signals
