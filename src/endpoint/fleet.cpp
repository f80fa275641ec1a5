#include "endpoint/fleet.h"

#include <algorithm>
#include <array>
#include <queue>
#include <utility>

#include "endpoint/prefix_cache.h"
#include "endpoint/router.h"

namespace cmax::endpoint {
namespace {

struct PolicyEntry {
  Policy policy;
  std::string_view name;
};
constexpr std::array<PolicyEntry, 7> kPolicies{{
    {Policy::kRoundRobin, "round_robin"},
    {Policy::kRandom, "random"},
    {Policy::kLeastLoaded, "least_loaded"},
    {Policy::kConsistentHash, "consistent_hash"},
    {Policy::kCacheAware, "cache_aware"},
    {Policy::kPrecise, "precise"},
    {Policy::kPowerOfTwo, "power_of_two"},
}};
constexpr std::array<Policy, 7> kAll{Policy::kRoundRobin, Policy::kRandom,  Policy::kLeastLoaded, Policy::kConsistentHash,
                                     Policy::kCacheAware, Policy::kPrecise, Policy::kPowerOfTwo};

// An admitted request still counted on its replica: when the model expects it to end, and the
// decode slot it holds.
struct Running {
  double finish_s;
  std::size_t slot;
  bool operator>(const Running& o) const { return finish_s > o.finish_s; }
};

// A replica's timing state; its cache lives in Fleet::Impl::caches so the router can read them all.
struct ReplicaClock {
  explicit ReplicaClock(int slots) : slot_free_s(static_cast<std::size_t>(slots), 0.0) {}
  std::vector<double> slot_free_s;  // when each decode slot's last reservation ends
  double prefill_free_s = 0;        // prefill runs one request at a time
  std::priority_queue<Running, std::vector<Running>, std::greater<>> running;
};

}  // namespace

std::string_view policy_name(Policy p) {
  for (const auto& e : kPolicies)
    if (e.policy == p) return e.name;
  return "unknown";
}

bool policy_from_name(std::string_view name, Policy& out) {
  for (const auto& e : kPolicies)
    if (e.name == name) {
      out = e.policy;
      return true;
    }
  return false;
}

std::span<const Policy> all_policies() { return kAll; }

struct Fleet::Impl {
  explicit Impl(FleetConfig c) : config(normalized(std::move(c))), router(config) {
    caches.reserve(static_cast<std::size_t>(config.replicas));
    for (int i = 0; i < config.replicas; ++i) {
      caches.emplace_back(config.cache_blocks);
      clocks.emplace_back(config.timing.max_concurrent);
    }
    load.assign(static_cast<std::size_t>(config.replicas), 0);
  }
  static FleetConfig normalized(FleetConfig c) {
    c.replicas = std::max(1, c.replicas);
    c.timing.max_concurrent = std::max(1, c.timing.max_concurrent);
    c.block_tokens = std::max(1, c.block_tokens);
    return c;
  }

  FleetConfig config;
  Router router;
  std::vector<PrefixCache> caches;
  std::vector<ReplicaClock> clocks;
  std::vector<int> load;  // admitted, not finished
  std::uint64_t tick = 0;
};

Fleet::Fleet(FleetConfig config) : impl_(new Impl(std::move(config))) {}
Fleet::~Fleet() { delete impl_; }
Fleet::Fleet(Fleet&& o) noexcept : impl_(std::exchange(o.impl_, nullptr)) {}
Fleet& Fleet::operator=(Fleet&& o) noexcept {
  if (this != &o) {
    delete impl_;
    impl_ = std::exchange(o.impl_, nullptr);
  }
  return *this;
}

Admission Fleet::admit(std::span<const std::uint64_t> blocks, std::uint32_t prompt_tokens,
                       std::uint32_t output_tokens, std::string_view session, double now_s) {
  Impl& m = *impl_;
  const TimingModel& t = m.config.timing;
  ++m.tick;
  const Route route = m.router.pick(blocks, session, m.load, m.caches);
  const int r = route.replica;
  const auto ri = static_cast<std::size_t>(r);
  m.router.routed(r, blocks, m.tick);

  Admission a;
  a.replica = r;
  a.prompt_blocks = blocks.size();
  a.cached_blocks = m.caches[ri].insert(blocks, m.tick);
  a.cached_tokens = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(std::uint64_t{a.cached_blocks} * static_cast<std::uint64_t>(m.config.block_tokens), prompt_tokens));

  ReplicaClock& c = m.clocks[ri];
  // The decode slot that frees first; the request waits for it, then for the prefill engine.
  const auto slot_it = std::min_element(c.slot_free_s.begin(), c.slot_free_s.end());
  const auto slot = static_cast<std::size_t>(slot_it - c.slot_free_s.begin());
  const double queued_until = std::max(now_s, *slot_it);
  a.start_s = std::max(queued_until, c.prefill_free_s);
  const double uncached = static_cast<double>(prompt_tokens - a.cached_tokens);
  a.first_token_s = a.start_s + (t.prefill_tokens_per_s > 0 ? uncached / t.prefill_tokens_per_s : 0.0);
  c.prefill_free_s = a.first_token_s;
  // Batch size when it starts decoding: the other slots still busy then, and itself.
  int batch = 1;
  for (std::size_t j = 0; j < c.slot_free_s.size(); ++j)
    if (j != slot && c.slot_free_s[j] > a.first_token_s) ++batch;
  const double rate = t.decode_tokens_per_s / (1.0 + t.batch_slowdown * (batch - 1));
  a.per_token_s = rate > 0 ? 1.0 / rate : 0.0;
  a.finish_s = a.first_token_s + (output_tokens > 1 ? (output_tokens - 1) * a.per_token_s : 0.0);
  c.slot_free_s[slot] = a.finish_s;
  c.running.push({a.finish_s, slot});
  ++m.load[ri];
  return a;
}

void Fleet::finish(int replica, double now_s) {
  Impl& m = *impl_;
  if (replica < 0 || replica >= m.config.replicas) return;
  const auto ri = static_cast<std::size_t>(replica);
  ReplicaClock& c = m.clocks[ri];
  if (c.running.empty()) return;
  // The caller does not say which request ended; the model takes the one it expected first
  // (exact in the simulator, which calls finish at each finish_s in order).
  const Running e = c.running.top();
  c.running.pop();
  --m.load[ri];
  // Ended earlier than the model expected (a client went away): free its slot now, unless a
  // later reservation already follows on that slot.
  if (now_s < e.finish_s && c.slot_free_s[e.slot] == e.finish_s) c.slot_free_s[e.slot] = now_s;
}

const PrefixCache& Fleet::cache(int replica) const { return impl_->caches.at(static_cast<std::size_t>(replica)); }

const FleetConfig& Fleet::config() const { return impl_->config; }
std::vector<int> Fleet::running() const { return impl_->load; }

void Fleet::flush_caches() {
  for (auto& c : impl_->caches) c = PrefixCache(impl_->config.cache_blocks);
}

}  // namespace cmax::endpoint
