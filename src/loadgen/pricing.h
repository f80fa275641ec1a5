#pragma once
// Price sheets and the bill of a run: what the measured tokens cost, what a month at the measured
// rate costs, and what both would cost at a reference cache hit rate, with the arithmetic written
// out so a reader can check it. Pure.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"

namespace cmax::loadgen {

/// One provider's prices. Token pricing: dollars per million tokens. Self-hosted: dollars per
/// GPU-hour and the GPUs behind the endpoint (then the token prices are unused).
struct PriceSheet {
  std::string provider;
  bool per_gpu_hour = false;
  double input_per_mtok = 0, cached_input_per_mtok = 0, cache_write_per_mtok = 0, output_per_mtok = 0;
  double usd_per_gpu_hour = 0;
  int gpus = 1;
};

/// Reads a price file (docs/endpoint-bench.md "Price sheets"): either one sheet object, or
/// {"schema":"cmax.prices/1","providers":{"NAME":{sheet}, ...}} from which `provider` is taken.
/// A sheet: {"input_per_mtok", "cached_input_per_mtok" (default = input), "cache_write_per_mtok"
/// (default = input), "output_per_mtok"} or {"usd_per_gpu_hour", "gpus" (default 1)}. Negative or
/// non-numeric prices, an unknown provider (the error lists the known ones), both kinds or neither
/// are errors naming the field.
Result<PriceSheet> parse_price_sheet(std::string_view text, std::string_view provider);

struct BillInput {
  std::uint64_t prompt_tokens = 0, cached_tokens = 0, cache_creation_tokens = 0, completion_tokens = 0;
  double duration_s = 0;           ///< the run's measured span (for the monthly projection and GPU-hours)
  double reference_hit_rate = 0.99;  ///< the best peer's, or 0.99
  double monthly_mtok = 0;         ///< > 0: project a month at this many million total tokens instead of
                                   ///< the run's token rate sustained for 30 days
};

struct Bill {
  double measured_hit_rate = 0;  ///< cached / prompt
  double run_usd = 0;            ///< the run's tokens at the sheet's prices
  double run_usd_no_cache = 0;   ///< the same with every prompt token at the input price
  double monthly_usd = 0;
  double reference_hit_rate = 0;
  double run_usd_at_reference = 0;     ///< the same prompt and output tokens at the reference hit rate
  double monthly_usd_at_reference = 0;
  double ratio_to_reference = 0;       ///< run_usd / run_usd_at_reference (1 for GPU-hour sheets)
  double usd_per_mtok = 0;             ///< run_usd per million total (prompt + completion) tokens
  double usd_per_mtok_output = 0;      ///< run_usd per million completion tokens
  double input_usd_per_mtok_effective = 0;  ///< (1-h) x input + h x cached_input (token sheets)
  /// The arithmetic, one line each, e.g.
  /// "input: (10,000 - 7,500 cached) x $0.25/Mtok = $0.000625". GPU-hour sheets say why the
  /// reference rows are the same (the hit rate shows in throughput there, not in the price).
  std::vector<std::string> arithmetic;
};
Bill compute_bill(const PriceSheet& sheet, const BillInput& in);

/// {"provider", "kind": "tokens"|"gpu_hour", prices, "measured_hit_rate", "run_usd", ...,
///  "arithmetic": [...]} as in docs/schemas/endpoint-bench.md; and back (for compare).
nlohmann::json bill_to_json(const PriceSheet& sheet, const Bill& bill);
Result<Bill> bill_from_json(const nlohmann::json& j);

}  // namespace cmax::loadgen
