#include "signals/prefilter.h"

#include <hs/hs.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace cmax::signals {
namespace {

struct Context {
  std::string_view text;
  std::size_t line_end = 0;  // end of the last line reported; matches before it are that line's
  bool any = false;
  const std::function<void(std::size_t, std::size_t)>* on_line;
};

int on_match(unsigned int, unsigned long long, unsigned long long to, unsigned int, void* user) {
  auto* c = static_cast<Context*>(user);
  std::size_t end_of_match = static_cast<std::size_t>(to);
  if (c->any && end_of_match <= c->line_end) return 0;
  const char* base = c->text.data();
  const void* prev = end_of_match ? ::memrchr(base, '\n', end_of_match) : nullptr;
  std::size_t begin = prev ? static_cast<std::size_t>(static_cast<const char*>(prev) - base) + 1 : 0;
  const void* nl = std::memchr(base + end_of_match, '\n', c->text.size() - end_of_match);
  std::size_t end = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - base) : c->text.size();
  c->line_end = end;
  c->any = true;
  (*c->on_line)(begin, end);
  return 0;
}

}  // namespace

namespace {

Result<hs_database_t*> compile(std::span<const std::string_view> literals) {
  std::vector<const char*> exprs;
  std::vector<std::size_t> lens;
  std::vector<unsigned> flags, ids;
  for (std::size_t i = 0; i < literals.size(); ++i) {
    exprs.push_back(literals[i].data());
    lens.push_back(literals[i].size());
    flags.push_back(0);
    ids.push_back(static_cast<unsigned>(i));
  }
  hs_database_t* db = nullptr;
  hs_compile_error_t* err = nullptr;
  if (hs_compile_lit_multi(exprs.data(), flags.data(), ids.data(), lens.data(), static_cast<unsigned>(exprs.size()),
                           HS_MODE_BLOCK, nullptr, &db, &err) != HS_SUCCESS) {
    std::string msg = err && err->message ? err->message : "unknown error";
    int which = err ? err->expression : -1;
    hs_free_compile_error(err);
    return fail("compile the kernel-log prefilter: literal {}: {}", which, msg);
  }
  return db;
}

}  // namespace

Result<Prefilter> Prefilter::create(std::span<const std::string_view> literals) {
  auto db = compile(literals);
  if (!db) return Unexpected<Error>{db.error()};
  hs_scratch_t* scratch = nullptr;
  if (hs_alloc_scratch(*db, &scratch) != HS_SUCCESS) {
    hs_free_database(*db);
    return fail("allocate the kernel-log prefilter's scratch space: out of memory");
  }
  return Prefilter(*db, scratch, true);
}

// Hyperscan aligns the databases it allocates, so a cached database is held through an interior
// pointer, which leak checkers report. The shared databases are allocated here instead, with the
// allocation's start kept reachable for the life of the process.
static void* shared_db_alloc(std::size_t size) {
  static std::vector<std::unique_ptr<char[]>> keep;
  keep.push_back(std::make_unique<char[]>(size + 64));
  return keep.back().get();
}
static void shared_db_free(void*) {}

Result<Prefilter> Prefilter::create_shared(std::span<const std::string_view> static_literals) {
  static std::mutex mu;
  static std::map<const std::string_view*, hs_database_t*> cache;  // lives for the process
  hs_database_t* db = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(static_literals.data());
    if (it != cache.end()) {
      db = it->second;
    } else {
      hs_set_database_allocator(shared_db_alloc, shared_db_free);
      auto compiled = compile(static_literals);
      hs_set_database_allocator(nullptr, nullptr);
      if (!compiled) return Unexpected<Error>{compiled.error()};
      db = cache[static_literals.data()] = *compiled;
    }
  }
  hs_scratch_t* scratch = nullptr;
  if (hs_alloc_scratch(db, &scratch) != HS_SUCCESS)
    return fail("allocate the kernel-log prefilter's scratch space: out of memory");
  return Prefilter(db, scratch, false);
}

Prefilter::Prefilter(Prefilter&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      scratch_(std::exchange(other.scratch_, nullptr)),
      owns_db_(other.owns_db_) {}

Prefilter::~Prefilter() {
  if (scratch_) hs_free_scratch(scratch_);
  if (db_ && owns_db_) hs_free_database(db_);
}

Result<void> Prefilter::scan(std::string_view text, const std::function<void(std::size_t, std::size_t)>& on_line) {
  if (text.empty()) return ok();
  // Hyperscan takes an unsigned int length: scan in pieces of whole lines below 1 GiB.
  constexpr std::size_t kPiece = 1u << 30;
  std::size_t base = 0;
  while (base < text.size()) {
    std::size_t end = std::min(text.size(), base + kPiece);
    if (end < text.size()) {
      auto nl = text.rfind('\n', end);
      end = nl == std::string_view::npos || nl < base ? end : nl + 1;
    }
    std::string_view piece = text.substr(base, end - base);
    Context pc{piece, 0, false, nullptr};
    std::function<void(std::size_t, std::size_t)> shifted = [&](std::size_t b, std::size_t e) { on_line(base + b, base + e); };
    pc.on_line = &shifted;
    if (hs_scan(db_, piece.data(), static_cast<unsigned>(piece.size()), 0, scratch_, on_match, &pc) != HS_SUCCESS)
      return fail("scan with the kernel-log prefilter: Hyperscan error");
    base = end;
  }
  return ok();
}

}  // namespace cmax::signals
