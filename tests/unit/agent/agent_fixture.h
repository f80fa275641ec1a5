#pragma once
// What the agent tests share (test_agent.cpp, test_agent_fleet_view.cpp): an event log that starts
// reading at the end of this machine's ring buffer, a wait for a condition, the built-in catalog.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/event_log.h"
#include "agent/kmsg_follow.h"
#include "signals/catalog.h"

namespace cmax::agent::testing_support {

using namespace std::chrono_literals;

// An event log whose resume point is the end of the ring buffer now, so the agent reads only
// what the test writes from here on (and whatever other tests write meanwhile).
struct Fixture {
  std::string db = ::testing::TempDir() + fmt::format("cmax-agent-{}-{}.db", ::getpid(), std::random_device{}());
  std::optional<EventLog> log;
  std::string boot;
  Fixture() {
    std::remove(db.c_str());
    auto l = EventLog::open(db);
    EXPECT_TRUE(l);
    log.emplace(std::move(*l));
    boot = read_boot_id().value_or("unknown");
    auto f = KmsgFollower::open("/dev/kmsg", std::nullopt);
    EXPECT_TRUE(f);
    for (;;) {
      auto r = f->next(0ms);
      if (!r || !*r) break;
    }
    EXPECT_TRUE(log->save_resume_point({boot, f->last_seq().value_or(0)}));
  }
  ~Fixture() {
    log.reset();
    for (const char* ext : {"", "-wal", "-shm"}) std::remove((db + ext).c_str());
  }
  AgentOptions options() {
    AgentOptions o;
    o.node = "n1";
    o.boot_id = boot;
    o.poll = 20ms;
    o.flush = 50ms;
    o.breaker_max_actions = 100;
    return o;
  }
};

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 5000ms) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

inline const signals::Catalog& catalog() {
  static const signals::Catalog c = signals::Catalog::builtin().value();
  return c;
}

}  // namespace cmax::agent::testing_support
