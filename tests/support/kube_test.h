#pragma once
// The base of every RealApiServer test (tests/kube): a fresh control plane per test, or a skip with
// the one line that says why none can start here. Helpers the tests share read Node objects.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "support/kube_cluster.h"

namespace cmax::test {

class RealApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = KubeCluster::unavailable()) GTEST_SKIP() << *why;
    auto k = KubeCluster::start();
    ASSERT_TRUE(k) << k.error().message;
    kube_ = std::move(*k);
  }
  std::unique_ptr<KubeCluster> kube_;
};

/// The node carries a taint with `key`.
inline bool has_taint(const nlohmann::json& node, const std::string& key) {
  if (!node.is_object() || !node.contains("spec") || !node["spec"].contains("taints")) return false;
  for (const auto& t : node["spec"]["taints"])
    if (t.value("key", "") == key) return true;
  return false;
}

}  // namespace cmax::test
