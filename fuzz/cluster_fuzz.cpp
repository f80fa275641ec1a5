// libFuzzer target: the Slurm half of a cluster run (cluster/frame.h, cluster/slurm_plan.h,
// cluster/collect_doc.h). Input: bytes 0 and 1 pick two split points; the whole input is the
// stream. Invariants, each an abort when broken:
//   - FrameDecoder fed the stream in 3 pieces reports exactly what one whole feed reports
//     (documents and other output), and a document is either whole (no error) or empty (error);
//   - encode_frames of the stream (newlines blanked) decodes back to it, labelled or not, and
//     every frame line fits srun's 1,024-byte line with a label;
//   - parse_sinfo_nodes gives unique, trimmed, non-empty names and states; not_schedulable names
//     its node; srun_argv ends with "--" and the collect argv;
//   - parse_srun_error names a node without spaces; neither it nor is_fatal_srun_error throws;
//   - parse_collect_doc never throws, on the stream and on every decoded document, and a
//     document it reads has a node and consistent scan counts.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster/collect_doc.h"
#include "cluster/frame.h"
#include "cluster/slurm_plan.h"

namespace {

using namespace cmax::cluster;

void check(bool ok) {
  if (!ok) std::abort();
}

struct Decoded {
  std::vector<FramedDocument> docs;
  std::map<int, std::string> other;
};

bool same(const Decoded& a, const Decoded& b) {
  if (a.docs.size() != b.docs.size() || a.other != b.other) return false;
  for (std::size_t i = 0; i < a.docs.size(); ++i) {
    const auto &x = a.docs[i], &y = b.docs[i];
    if (x.task != y.task || x.node != y.node || x.document != y.document || x.error != y.error) return false;
  }
  return true;
}

Decoded decode(const std::vector<std::string_view>& pieces, std::size_t max_bytes) {
  Decoded d;
  FrameDecoder decoder([&](FramedDocument doc) { d.docs.push_back(std::move(doc)); }, max_bytes);
  for (auto p : pieces) decoder.feed(p);
  decoder.finish();
  d.other = decoder.other_output();
  for (const auto& doc : d.docs) {
    check(doc.error.empty() || doc.document.empty());
    check(doc.document.size() <= max_bytes);
    check(doc.document.find('\n') == std::string::npos);
  }
  return d;
}

void collect_doc(std::string_view text) {
  auto doc = parse_collect_doc(text, "fuzz");
  if (!doc) {
    check(!doc.error().message.empty());
    return;
  }
  check(!doc->node.empty());
  check(doc->scan.actionable <= doc->scan.incidents);
  check(doc->scan.top.size() <= 5 && doc->scan.top.size() <= doc->scan.actionable);
  check(doc->scan.worst_action.empty() == (doc->scan.actionable == 0));
}

void frames(std::string_view s, std::size_t a, std::size_t b) {
  for (std::size_t max_bytes : {std::size_t{64} << 20, std::size_t{64}}) {
    const Decoded whole = decode({s}, max_bytes);
    const Decoded pieces = decode({s.substr(0, a), s.substr(a, b - a), s.substr(b)}, max_bytes);
    check(same(whole, pieces));
    for (const auto& d : whole.docs) collect_doc(d.document);
  }

  std::string doc(s);
  for (char& c : doc)
    if (c == '\n' || c == '\r') c = ' ';
  const std::string encoded = encode_frames("gpu-07", doc);
  std::size_t at = 0;
  for (std::size_t nl = encoded.find('\n'); nl != std::string::npos; at = nl + 1, nl = encoded.find('\n', at))
    check(nl - at + 1 + 6 <= 1024);
  check(at == encoded.size());
  const std::string labelled = [&] {
    std::string out;
    std::size_t from = 0;
    for (std::size_t nl = encoded.find('\n'); nl != std::string::npos; from = nl + 1, nl = encoded.find('\n', from))
      out.append("12: ").append(encoded, from, nl - from + 1);
    return out;
  }();
  for (int task : {-1, 12}) {
    const std::string_view stream = task < 0 ? encoded : labelled;
    const std::size_t cut = std::min(a, stream.size());
    const Decoded got = decode({stream.substr(0, cut), stream.substr(cut)}, 64u << 20);
    check(got.docs.size() == 1 && got.other.empty());
    check(got.docs[0].error.empty() && got.docs[0].document == doc && got.docs[0].node == "gpu-07");
    check(got.docs[0].task == task);
  }
}

void slurm(std::string_view s) {
  if (auto nodes = parse_sinfo_nodes(s)) {
    std::vector<std::string> names;
    for (const auto& n : *nodes) {
      check(!n.name.empty() && !n.state.empty());
      check(n.name.front() != ' ' && n.name.back() != ' ' && n.state.front() != ' ' && n.state.back() != ' ');
      for (const auto& m : names) check(m != n.name);
      names.push_back(n.name);
      for (bool overlap : {false, true}) {
        if (auto out = not_schedulable(n, overlap)) {
          check(out->node == n.name && out->status == NodeStatus::not_scheduled && !out->detail.empty());
        }
      }
    }
    SrunOptions o;
    o.collect_argv = {"/usr/bin/cmax", "collect", "--frame"};
    o.node_timeout = std::chrono::milliseconds(s.size() * 997);
    const auto argv = srun_argv(names, o);
    check(argv.size() >= 4 && argv[0] == "srun" && argv[argv.size() - 4] == "--" && argv.back() == "--frame");
    // A plan over these nodes with a reservation holding every other one: each node is asked
    // once or skipped once, and a reservation's group holds only its nodes.
    cmax::sched::Reservation r;
    r.name = "fuzz";
    r.state = "ACTIVE";
    r.users = {s.size() % 2 ? "root" : "alice"};
    for (std::size_t i = 0; i < names.size(); i += 2) r.nodes.push_back(names[i]);
    if (auto plan = plan_srun({*nodes, {r}, s.size() % 3 == 0 ? "fuzz" : "", "root"}, o)) {
      check(plan->nodes.size() + plan->skipped.size() == names.size());
      std::size_t grouped = 0;
      for (const auto& g : plan->groups) {
        grouped += g.nodes.size();
        check(!g.nodes.empty() && !g.argv.empty());
        if (!g.reservation.empty())
          for (const auto& n : g.nodes) check(r.contains(n));
      }
      check(grouped == plan->nodes.size());
    }
  } else {
    check(!nodes.error().message.empty());
  }

  std::size_t at = 0;
  while (at <= s.size()) {
    auto nl = s.find('\n', at);
    auto line = s.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    if (auto ev = parse_srun_error(line)) {
      check(!ev->node.empty() && ev->node.find(' ') == std::string::npos);
      check(ev->status == NodeStatus::unreachable || ev->status == NodeStatus::failed);
    }
    (void)is_fatal_srun_error(line);
    (void)is_reservation_refusal(line);
    if (auto job = parse_srun_queued(line)) check(!job->empty() && job->find_first_not_of("0123456789_+") == std::string::npos);
    if (auto why = parse_srun_unavailable(line)) check(!why->empty() && line.find(*why) != std::string_view::npos);
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view s(reinterpret_cast<const char*>(data), size);
  std::size_t a = size ? data[0] * size / 256 : 0;
  std::size_t b = size > 1 ? data[1] * size / 256 : 0;
  if (a > b) std::swap(a, b);
  frames(s, a, b);
  slurm(s);
  collect_doc(s);
  return 0;
}
