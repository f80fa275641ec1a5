#include "apps/cmax-collbench/ops.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "nccl/sweep_plan.h"

namespace cmax::collbench {
namespace {

struct OpRow {
  Op op;
  std::string_view name;
};

constexpr OpRow kOps[] = {
    {Op::kAllReduce, "all_reduce"},
    {Op::kAllGather, "all_gather"},
    {Op::kReduceScatter, "reduce_scatter"},
    {Op::kAlltoall, "alltoall"},
    {Op::kSendRecv, "sendrecv"},
    {Op::kBroadcast, "broadcast"},
};

struct DtypeRow {
  Dtype type;
  std::string_view name;
  std::size_t bytes;
};

constexpr DtypeRow kDtypes[] = {
    {Dtype::kFloat, "float", 4}, {Dtype::kDouble, "double", 8}, {Dtype::kInt32, "int32", 4}};

struct RedOpRow {
  RedOp op;
  std::string_view name;
};

constexpr RedOpRow kRedOps[] = {
    {RedOp::kSum, "sum"}, {RedOp::kProd, "prod"}, {RedOp::kMin, "min"}, {RedOp::kMax, "max"}};

}  // namespace

std::string_view op_name(Op op) {
  for (const auto& r : kOps)
    if (r.op == op) return r.name;
  return "unknown";
}

std::optional<Op> parse_op(std::string_view name) {
  if (auto slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  if (name.ends_with("_perf")) name.remove_suffix(5);
  for (const auto& r : kOps)
    if (r.name == name) return r.op;
  return std::nullopt;
}

std::vector<std::string> op_names() {
  std::vector<std::string> out;
  for (const auto& r : kOps) out.emplace_back(r.name);
  return out;
}

std::string_view dtype_name(Dtype t) {
  for (const auto& r : kDtypes)
    if (r.type == t) return r.name;
  return "unknown";
}

std::optional<Dtype> parse_dtype(std::string_view name) {
  for (const auto& r : kDtypes)
    if (r.name == name) return r.type;
  return std::nullopt;
}

std::size_t dtype_bytes(Dtype t) {
  for (const auto& r : kDtypes)
    if (r.type == t) return r.bytes;
  return 1;
}

std::string_view redop_name(RedOp r) {
  for (const auto& row : kRedOps)
    if (row.op == r) return row.name;
  return "unknown";
}

std::optional<RedOp> parse_redop(std::string_view name) {
  for (const auto& row : kRedOps)
    if (row.name == name) return row.op;
  return std::nullopt;
}

std::string_view redop_column(Op op, RedOp r) {
  switch (op) {
    case Op::kAllReduce:
    case Op::kReduceScatter:
    case Op::kSendRecv:  // nccl-tests' sendrecv loops over reductions it never applies
      return redop_name(r);
    default:
      return "none";
  }
}

int root_column(Op op, int root) { return op == Op::kBroadcast ? root : -1; }

Counts coll_counts(Op op, std::size_t count, int nranks) {
  const std::size_t n = nranks > 0 ? static_cast<std::size_t>(nranks) : 1;
  switch (op) {
    case Op::kAllGather:
      return {count / n, (count / n) * n, count / n};
    case Op::kReduceScatter:
      return {(count / n) * n, count / n, count / n};
    case Op::kAlltoall:
      return {(count / n) * n, (count / n) * n, count / n};
    default:
      return {count, count, count};
  }
}

std::size_t row_size_bytes(const Counts& c, std::size_t type_bytes) {
  return std::max(c.send, c.recv) * type_bytes;
}

double alg_bw_gbps(Op op, std::size_t param_count, std::size_t type_bytes, int nranks,
                   double seconds) {
  double bytes = static_cast<double>(param_count) * static_cast<double>(type_bytes);
  if (op == Op::kAllGather || op == Op::kReduceScatter || op == Op::kAlltoall) bytes *= nranks;
  return bytes / 1.0e9 / seconds;
}

double bus_factor(Op op, int nranks) {
  if (nranks < 1) return 0;
  const double n = nranks;
  switch (op) {
    case Op::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Op::kAllGather:
    case Op::kReduceScatter:
    case Op::kAlltoall:
      return (n - 1) / n;
    default:
      return 1.0;
  }
}

std::optional<std::size_t> parse_size(std::string_view text) {
  // One reading of nccl-tests' sizes for the sweep that plans these runs and for the bench itself.
  auto v = nccl::parse_size_bytes(text);
  if (!v || *v > std::numeric_limits<std::size_t>::max()) return std::nullopt;
  return static_cast<std::size_t>(*v);
}

std::vector<std::size_t> sweep_sizes(std::size_t min_bytes, std::size_t max_bytes,
                                     std::size_t step_bytes, std::size_t step_factor) {
  std::vector<std::size_t> out;
  if (step_factor <= 1 && step_bytes == 0) return {min_bytes};
  for (std::size_t s = min_bytes; s <= max_bytes;) {
    out.push_back(s);
    std::size_t next = step_factor > 1 ? s * step_factor : s + step_bytes;
    if (next <= s) break;  // overflow, or a zero minimum that a factor never moves
    s = next;
  }
  return out;
}

}  // namespace cmax::collbench
