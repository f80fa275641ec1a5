// libFuzzer target: prefix parser + classifier on each line, then the whole scan (prefilter,
// classifier, correlator) on the input, in memory and in small chunks. Invariants: every line
// classify() recognises holds one of anchor_literals() (else the prefilter would never hand it
// over), classify(m, anchors) returns what classify(m) returns whenever `anchors` holds the anchors
// in m (as the scanner passes them), a signal's device and subject lie inside its message, and a chunked scan finds the same
// incidents as an in-memory scan of the input without its lines longer than the chunk (those are
// skipped unread, and nothing else may be).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "signals/catalog.h"
#include "signals/classify.h"
#include "signals/correlate.h"
#include "signals/drill_marker.h"
#include "signals/prefix.h"
#include "signals/pstore.h"
#include "signals/scanner.h"
#include "signals/source.h"

namespace {

using namespace cmax::signals;

constexpr std::size_t kChunkBytes = 256;

void check(bool ok) {
  if (!ok) std::abort();
}

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

const Catalog& catalog() {
  static const Catalog c = [] {
    auto r = Catalog::builtin();
    check(static_cast<bool>(r));
    return std::move(r).value();
  }();
  return c;
}

// The input as a source that hands out at most `max_read` bytes a call (short reads, like a pipe).
class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string_view data, std::size_t max_read) : data_(data), max_read_(max_read) {}
  cmax::Result<std::size_t> read(char* buf, std::size_t cap) override {
    std::size_t n = std::min({cap, data_.size() - pos_, max_read_});
    std::memcpy(buf, data_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  std::string describe() const override { return "fuzz input"; }

 private:
  std::string_view data_;
  std::size_t max_read_;
  std::size_t pos_ = 0;
};

bool same(const std::optional<Signal>& a, const std::optional<Signal>& b) {
  if (!a || !b) return !a && !b;
  return a->kind == b->kind && a->code == b->code && a->device == b->device && a->subject == b->subject &&
         a->fatal == b->fatal && a->corrected == b->corrected && a->recovery_action == b->recovery_action &&
         a->caused_by == b->caused_by;
}

AnchorSet anchors_in(std::string_view text) {
  AnchorSet set = 0;
  auto a = anchor_literals();
  for (std::size_t i = 0; i < a.size(); ++i)
    if (text.find(a[i]) != std::string_view::npos) set |= AnchorSet{1} << i;
  return set;
}

// A drill marker the parser accepts says the same when written again (its fingerprints aside,
// which are of lines the fuzzer does not give); a drill tag is a short id inside the message.
void drill_marker(std::string_view message) {
  if (auto mk = parse_drill_marker(message)) {
    check(!mk->id.empty() && mk->id.size() <= 16);
    if (mk->end) {
      auto again = parse_drill_marker(format_drill_end(mk->id));
      check(again && again->end && again->id == mk->id);
    } else {
      check(mk->lines.size() <= 64 && !mk->scenario.empty());
    }
  }
  if (auto tag = drill_tag_of(message)) check(!tag->empty() && tag->size() <= 16 && inside(*tag, message));
  DrillTracker t;
  if (auto mk = parse_drill_marker(message)) t.on_marker("fuzz", *mk);
  (void)t.match("fuzz", message, 1e9);
}

void classify_line(std::string_view line) {
  auto info = parse_line_prefix(line, 2024);
  drill_marker(info.message);
  auto sig = classify(info.message);
  check(same(classify(info.message, anchors_in(info.message)), sig));  // the least it may be given
  check(same(classify(info.message, anchors_in(line)), sig));          // what the scanner gives
  if (!sig) return;
  check(anchors_in(info.message) != 0);
  check(inside(sig->device, info.message));
  check(inside(sig->subject, info.message));
  (void)to_string(sig->kind);
  (void)to_string(catalog().action_for(*sig));
}

std::vector<std::string> summary(const Correlator& c) {
  std::vector<std::string> out;
  for (const auto& i : c.incidents())
    out.push_back(i.node + "|" + std::string(to_string(i.kind)) + "|" + std::to_string(i.code) + "|" + i.device +
                  "|" + std::to_string(i.count) + "|" + std::string(to_string(i.action)) +
                  (i.resolved ? "|resolved" : "|open"));
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string fitting;  // the input with every line that cannot fit in one chunk emptied
  for (std::string_view rest = input; !rest.empty();) {
    auto nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    classify_line(line);
    // A pstore record's header ("Panic#1 Part1"): a parse is well formed.
    if (auto h = parse_pstore_header(line)) check(h->count >= 0 && h->part >= 0 && !h->why.empty() && h->why.size() < 16);
    if (line.size() < kChunkBytes) fitting += line;
    if (nl == std::string_view::npos) break;
    fitting += '\n';
    rest.remove_prefix(nl + 1);
  }

  Correlator whole(catalog());
  auto scanner = Scanner::create(whole);
  check(static_cast<bool>(scanner));
  check(static_cast<bool>(scanner->scan_text(input, "fuzz")));
  std::vector<std::string> expected = summary(whole);
  if (fitting != input) {
    Correlator fit(catalog());
    auto fit_scanner = Scanner::create(fit);
    check(static_cast<bool>(fit_scanner));
    check(static_cast<bool>(fit_scanner->scan_text(fitting, "fuzz")));
    expected = summary(fit);
  }

  ScanOptions small;
  small.chunk_bytes = kChunkBytes;
  Correlator chunked(catalog());
  auto chunk_scanner = Scanner::create(chunked, small);
  check(static_cast<bool>(chunk_scanner));
  // Odd sizes read like a file (full buffers), even sizes like a pipe (short reads).
  MemorySource source(input, size % 2 ? size : 1 + size % 301);
  check(static_cast<bool>(chunk_scanner->scan(source, "fuzz")));
  check(chunk_scanner->stats().bytes == size);
  check(summary(chunked) == expected);
  return 0;
}
