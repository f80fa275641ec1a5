#include "apps/cmax-collbench/data.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace cmax::collbench {
namespace {

// Element i of rank r's full send buffer. 1 or 2 for products (powers of two stay exact), 1..11
// otherwise; the rank term makes a block that went to the wrong peer show up as wrong.
std::int64_t value(RedOp op, int rank, std::size_t i) {
  if (op == RedOp::kProd)
    return 1 + static_cast<std::int64_t>((static_cast<std::size_t>(rank) + i) % 2);
  return 1 + static_cast<std::int64_t>((static_cast<std::size_t>(rank) * 5 + i) % 11);
}

std::int64_t reduce(RedOp op, std::int64_t a, std::int64_t b) {
  switch (op) {
    case RedOp::kSum:
      return a + b;
    case RedOp::kProd:  // wraps past 62 ranks instead of overflowing
      return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) *
                                       static_cast<std::uint64_t>(b));
    case RedOp::kMin:
      return std::min(a, b);
    case RedOp::kMax:
      return std::max(a, b);
  }
  return a;
}

// Element i of the reduction over every rank of their element i (int64 so 2^n stays exact up to
// n = 62; int32 products of more than 30 ranks then wrap like the collective's arithmetic).
std::int64_t reduced(RedOp op, int nranks, std::size_t i) {
  std::int64_t acc = value(op, 0, i);
  for (int r = 1; r < nranks; ++r) acc = reduce(op, acc, value(op, r, i));
  return acc;
}

template <class T>
void store(std::vector<std::byte>& out, std::size_t index, std::int64_t v) {
  T t;
  if constexpr (std::is_integral_v<T>) {
    t = static_cast<T>(static_cast<std::uint32_t>(v));
  } else {
    t = static_cast<T>(v);
  }
  std::memcpy(out.data() + index * sizeof(T), &t, sizeof(T));
}

void store(Dtype t, std::vector<std::byte>& out, std::size_t index, std::int64_t v) {
  switch (t) {
    case Dtype::kFloat:
      store<float>(out, index, v);
      break;
    case Dtype::kDouble:
      store<double>(out, index, v);
      break;
    case Dtype::kInt32:
      store<std::int32_t>(out, index, v);
      break;
  }
}

template <class T>
std::int64_t count_wrong_as(std::span<const std::byte> got, std::span<const std::byte> expected) {
  std::size_t n_got = got.size() / sizeof(T), n_exp = expected.size() / sizeof(T);
  std::size_t n = std::min(n_got, n_exp);
  std::int64_t wrong = static_cast<std::int64_t>(std::max(n_got, n_exp) - n);
  for (std::size_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, got.data() + i * sizeof(T), sizeof(T));
    std::memcpy(&b, expected.data() + i * sizeof(T), sizeof(T));
    if (!(a == b)) ++wrong;
  }
  return wrong;
}

}  // namespace

std::vector<std::byte> make_input(const Plan& plan, int rank, int nranks) {
  const auto& c = plan.counts;
  std::vector<std::byte> out(c.send * dtype_bytes(plan.dtype));
  for (std::size_t i = 0; i < c.send; ++i) {
    // all_gather's send buffer is block `rank` of the gathered whole.
    std::size_t global =
        plan.op == Op::kAllGather ? static_cast<std::size_t>(rank) * c.send + i : i;
    store(plan.dtype, out, i, value(plan.redop, rank, global));
  }
  (void)nranks;
  return out;
}

std::vector<std::byte> make_expected(const Plan& plan, int rank, int nranks) {
  const auto& c = plan.counts;
  std::vector<std::byte> out(c.recv * dtype_bytes(plan.dtype));
  for (std::size_t i = 0; i < c.recv; ++i) {
    std::int64_t v = 0;
    switch (plan.op) {
      case Op::kAllReduce:
        v = reduced(plan.redop, nranks, i);
        break;
      case Op::kReduceScatter:
        v = reduced(plan.redop, nranks, static_cast<std::size_t>(rank) * c.recv + i);
        break;
      case Op::kAllGather:
        v = value(plan.redop, static_cast<int>(i / c.param), i);
        break;
      case Op::kAlltoall: {
        // Block j came from rank j, which sent it from its block `rank`.
        int from = static_cast<int>(i / c.param);
        v = value(plan.redop, from, static_cast<std::size_t>(rank) * c.param + i % c.param);
        break;
      }
      case Op::kSendRecv:
        v = value(plan.redop, (rank - 1 + nranks) % nranks, i);
        break;
      case Op::kBroadcast:
        v = value(plan.redop, plan.root, i);
        break;
    }
    store(plan.dtype, out, i, v);
  }
  return out;
}

std::int64_t count_wrong(Dtype t, std::span<const std::byte> got,
                         std::span<const std::byte> expected) {
  switch (t) {
    case Dtype::kFloat:
      return count_wrong_as<float>(got, expected);
    case Dtype::kDouble:
      return count_wrong_as<double>(got, expected);
    case Dtype::kInt32:
      return count_wrong_as<std::int32_t>(got, expected);
  }
  return 0;
}

}  // namespace cmax::collbench
