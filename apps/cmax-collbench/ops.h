#pragma once
// nccl-tests' conventions for each collective: names, how a size in bytes becomes send, receive and
// parameter counts, and the bus-bandwidth factor. Pure functions, no I/O.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::collbench {

enum class Op { kAllReduce, kAllGather, kReduceScatter, kAlltoall, kSendRecv, kBroadcast };
enum class Dtype { kFloat, kDouble, kInt32 };
enum class RedOp { kSum, kProd, kMin, kMax };

/// Element counts of one collective call on one rank, as nccl-tests' <op>GetCollByteCount computes
/// them.
struct Counts {
  std::size_t send = 0;   ///< elements each rank sends
  std::size_t recv = 0;   ///< elements each rank receives
  std::size_t param = 0;  ///< the count passed to the collective; the "count" column
};

/// Everything one measurement needs to know about the call.
struct Plan {
  Op op = Op::kAllReduce;
  Dtype dtype = Dtype::kFloat;
  RedOp redop = RedOp::kSum;
  int root = 0;  ///< broadcast only
  Counts counts;
};

/// "all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv", "broadcast".
std::string_view op_name(Op op);
/// From "all_reduce", "all_reduce_perf", or a path ending in either (argv[0] of a symlink).
std::optional<Op> parse_op(std::string_view name);
/// Every op name, in table order, for help text.
std::vector<std::string> op_names();

/// "float", "double", "int32" as nccl-tests names them.
std::string_view dtype_name(Dtype t);
std::optional<Dtype> parse_dtype(std::string_view name);
std::size_t dtype_bytes(Dtype t);

std::string_view redop_name(RedOp r);
std::optional<RedOp> parse_redop(std::string_view name);

/// The redop column: the reduction for all_reduce, reduce_scatter and (as nccl-tests prints it)
/// sendrecv; "none" for the rest.
std::string_view redop_column(Op op, RedOp r);
/// The root column: the root for broadcast, -1 for the rest.
int root_column(Op op, int root);

/// Counts for `count` elements of the whole buffer on `nranks` ranks (nccl-tests semantics:
/// all_gather sends count/n and receives (count/n)*n; reduce_scatter the reverse; alltoall sends
/// and receives (count/n)*n with param count/n; the rest count everywhere).
Counts coll_counts(Op op, std::size_t count, int nranks);
/// The "size" column: max(send, recv) elements in bytes, as nccl-tests prints it.
std::size_t row_size_bytes(const Counts& c, std::size_t type_bytes);
/// algbw in GB/s (1e9 bytes): param*type*n / s for all_gather, reduce_scatter and alltoall,
/// param*type / s for the rest; equals row_size_bytes / s.
double alg_bw_gbps(Op op, std::size_t param_count, std::size_t type_bytes, int nranks,
                   double seconds);
/// busbw / algbw: 2(n-1)/n all_reduce; (n-1)/n all_gather, reduce_scatter, alltoall; 1 otherwise.
double bus_factor(Op op, int nranks);

/// A size as nccl-tests' -b/-e/-i take it: digits with an optional K, M, G or T suffix (powers of
/// 1024, either case). nullopt on anything else.
std::optional<std::size_t> parse_size(std::string_view text);
/// The sizes nccl-tests visits: min, then *factor (factor > 1) or +step_bytes, while <= max.
std::vector<std::size_t> sweep_sizes(std::size_t min_bytes, std::size_t max_bytes,
                                     std::size_t step_bytes, std::size_t step_factor);

}  // namespace cmax::collbench
