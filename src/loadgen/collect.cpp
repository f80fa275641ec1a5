#include "loadgen/collect.h"

namespace cmax::loadgen {

bool Collect::on_body(std::string_view b, int) {
  if (body.size() < (1u << 20)) body.append(b);
  return true;
}

void Collect::on_done(const TransferResult& r) {
  result = r;
  done = true;
}

bool Collect::wait(HttpEngine& engine, std::chrono::milliseconds timeout, const std::atomic<bool>* stop) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done && std::chrono::steady_clock::now() < deadline && !(stop && stop->load()))
    engine.poll(std::chrono::milliseconds(20));
  if (!done) engine.cancel_all();
  return done;
}

}  // namespace cmax::loadgen
