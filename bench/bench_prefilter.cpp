// Google Benchmark of the scan's first pass: Prefilter::find_lines over 512 KiB of kernel-log text
// (the scanner's read buffer), per instruction set, and classify() of the candidate lines with and
// without the prefilter's anchor sets. The text repeats real-looking noise with one fault line in
// 100 and near-misses that hold anchors, so both the no-hit path and the hit path are timed.
// Run: build/bench/bench_prefilter --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>

#include <string>

#include <fmt/format.h>
#include <vector>

#include "signals/classify.h"
#include "signals/prefilter.h"
#include "signals/prefix.h"

namespace {

using namespace cmax::signals;

// Dense: every line a near-miss or fault cycle, about half of the lines hold an anchor. Quiet: the
// same with only the lines that hold none, plus the faults (one line in 100).
std::string make_text(bool dense) {
    const char* noise[] = {
        "[ 1234.567890] audit: type=1400 audit(1763769600.123:4567): apparmor=\"STATUS\" operation=\"profile_load\" "
        "profile=\"unconfined\" name=\"lsb_release\" pid=4242 comm=\"apparmor_parser\"",
        "Nov 22 14:56:47 gpu-07 kernel: systemd[1]: Started Session 4242 of user alice.",
        "2026-11-22T14:56:47+00:00 gpu-07 kernel: docker0: port 3(veth1a2b3c4) entered blocking state",
        "[ 1234.567891] EXT4-fs (nvme0n1p2): re-mounted. Opts: errors=remount-ro. Quota mode: none.",
        "[ 1234.567892] nvme nvme3: 64/0/0 default/read/poll queues",
        "[ 1234.567893] [UFW BLOCK] IN=eth0 OUT= MAC=0c:42:a1:00:11:22 SRC=10.0.3.4 DST=10.0.5.6 LEN=60 PROTO=TCP",
        "[ 1234.567894] mlx5_core 0000:1a:00.1: Port module event: module 3, Cable plugged",
        "[ 1234.567895] NVRM: GPU at PCI:0000:3b:00: GPU-12345678-abcd-ef01-2345-6789abcdef01",
    };
    const char* faults[] = {
        "[ 1234.6] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
        "Nov 22 14:56:48 gpu-07 kernel: pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0",
        "[ 1234.7] nfs: server fs1 not responding, still trying",
    };
    const std::size_t quiet[] = {0, 1, 7};  // the noise lines without an anchor
    std::string out;
    for (std::size_t i = 0; out.size() < (512u << 10); ++i) {
      if (i % 100 == 99) {
        out += faults[(i / 100) % std::size(faults)];
      } else {
        out += noise[dense ? i % std::size(noise) : quiet[i % std::size(quiet)]];
      }
      out += '\n';
    }
    return out;
}

const std::string& text(bool dense = true) {
  static const std::string d = make_text(true), q = make_text(false);
  return dense ? d : q;
}

void BM_FindLines(benchmark::State& state) {
  const auto isa = static_cast<Isa>(state.range(0));
  const std::string& t = text(state.range(1) != 0);
  if (isa > best_isa()) {
    state.SkipWithError("this CPU lacks the instruction set");
    return;
  }
  auto p = Prefilter::create(anchor_literals(), isa);
  std::vector<Candidate> out;
  for (auto _ : state) {
    out.clear();
    p->find_lines(t, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetLabel(fmt::format("{} {}", to_string(isa), state.range(1) ? "dense" : "quiet"));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * t.size()));
  state.counters["lines"] = static_cast<double>(out.size());
}
BENCHMARK(BM_FindLines)->ArgsProduct({{static_cast<int>(Isa::scalar), static_cast<int>(Isa::avx2), static_cast<int>(Isa::avx512)}, {0, 1}});

// classify() of every candidate line, given all anchors (the plain cascade) or the line's own.
void BM_ClassifyCandidates(benchmark::State& state) {
  const bool hinted = state.range(0) != 0;
  auto p = Prefilter::create(anchor_literals());
  std::vector<Candidate> lines;
  p->find_lines(text(), lines);
  std::size_t signals = 0;
  for (auto _ : state) {
    signals = 0;
    for (const auto& c : lines) {
      auto info = parse_line_prefix(std::string_view(text()).substr(c.begin, c.end - c.begin), 2026);
      signals += classify(info.message, hinted ? c.literals : ~AnchorSet{0}).has_value();
    }
  }
  state.SetLabel(hinted ? "anchor sets" : "full cascade");
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * lines.size()));
  state.counters["signals"] = static_cast<double>(signals);
}
BENCHMARK(BM_ClassifyCandidates)->Arg(0)->Arg(1);

}  // namespace
