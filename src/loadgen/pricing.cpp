#include "loadgen/pricing.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace cmax::loadgen {
namespace {

using nlohmann::json;

constexpr std::string_view kPricesSchema = "cmax.prices/1";
constexpr double kMonthS = 30 * 86400.0;
constexpr double kMonthH = 30 * 24.0;
constexpr int kMaxGpus = 1'000'000;

constexpr std::array<std::string_view, 4> kTokenFields = {
    "input_per_mtok", "cached_input_per_mtok", "cache_write_per_mtok", "output_per_mtok"};
constexpr std::array<std::string_view, 2> kGpuFields = {"usd_per_gpu_hour", "gpus"};

// "1,234,567".
std::string grouped(std::uint64_t n) {
  std::string digits = fmt::format("{}", n);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// A plain number with its integer part grouped and at most `decimals` decimals, trailing zeros
// dropped: "12.5", "2,592,000", "0.027778".
std::string num(double x, int decimals = 3) {
  if (!std::isfinite(x)) return "n/a";
  std::string s = fmt::format("{:.{}f}", std::fabs(x), decimals);
  auto dot = s.find('.');
  std::string frac;
  if (dot != std::string::npos) {
    frac = s.substr(dot);
    while (!frac.empty() && (frac.back() == '0' || frac.back() == '.')) frac.pop_back();
    s.resize(dot);
  }
  std::string out = (x < 0 && (s != "0" || !frac.empty())) ? "-" : "";
  out += grouped(std::strtoull(s.c_str(), nullptr, 10));
  return out + frac;
}

// Dollars with enough digits to check by hand: at least three significant digits and six
// decimals below $100 ("$0.000625", "$0.096000"), cents above ("$2,600.00").
std::string usd(double x) {
  if (!std::isfinite(x)) return "$n/a";
  if (x == 0) return "$0";
  double a = std::fabs(x);
  std::string sign = x < 0 ? "-" : "";
  if (a >= 100) {
    std::string s = fmt::format("{:.2f}", a);
    auto dot = s.find('.');
    return sign + "$" + grouped(std::strtoull(s.substr(0, dot).c_str(), nullptr, 10)) +
           s.substr(dot);
  }
  int decimals = std::clamp(static_cast<int>(-std::floor(std::log10(a))) + 2, 6, 12);
  return sign + fmt::format("${:.{}f}", a, decimals);
}

// A price as written in the sheet: "$0.25", "$2.5" (shortest round-trip form).
std::string price(double x) { return fmt::format("${}", x); }

std::string pct(double h) { return fmt::format("{:.1f}%", 100 * h); }

std::string sheet_name(std::string_view provider) {
  return provider.empty() ? std::string("price sheet") : fmt::format("price sheet {}", provider);
}

Result<double> price_field(const json& sheet, std::string_view field, std::string_view provider) {
  const json& v = sheet.at(std::string(field));
  if (!v.is_number())
    return fail("{}: {} must be a number of dollars, got {}", sheet_name(provider), field,
                v.dump());
  double x = v.get<double>();
  if (!std::isfinite(x) || x < 0)
    return fail("{}: {} must not be negative, got {}", sheet_name(provider), field, v.dump());
  return x;
}

Result<PriceSheet> parse_sheet(const json& j, std::string provider) {
  if (!j.is_object())
    return fail("{}: expected an object of prices, got {}", sheet_name(provider), j.type_name());
  if (auto it = j.find("provider");
      it != j.end() && it->is_string() && !it->get<std::string>().empty())
    provider = it->get<std::string>();
  PriceSheet s;
  s.provider = provider;
  bool token = false, gpu = false;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    bool is_token = std::find(kTokenFields.begin(), kTokenFields.end(), key) != kTokenFields.end();
    bool is_gpu = std::find(kGpuFields.begin(), kGpuFields.end(), key) != kGpuFields.end();
    token |= is_token, gpu |= is_gpu;
    // Other fields (notes, sources, dates) are ignored, but a misspelt price would silently fall
    // back to a default and make the bill wrong, so anything that looks like a price must be known.
    if (!is_token && !is_gpu &&
        (key.find("mtok") != std::string::npos || key.find("gpu") != std::string::npos))
      return fail(
          "{}: unknown field {} (known: input_per_mtok, cached_input_per_mtok, "
          "cache_write_per_mtok, "
          "output_per_mtok, usd_per_gpu_hour, gpus)",
          sheet_name(provider), key);
  }
  if (token && gpu)
    return fail(
        "{}: both per-token prices (*_per_mtok) and usd_per_gpu_hour/gpus are set; keep one kind",
        sheet_name(provider));
  if (!token && !gpu)
    return fail(
        "{}: no prices; set input_per_mtok and output_per_mtok (dollars per million tokens) or "
        "usd_per_gpu_hour (and gpus)",
        sheet_name(provider));
  if (token) {
    for (std::string_view required : {"input_per_mtok", "output_per_mtok"})
      if (!j.contains(std::string(required)))
        return fail("{}: missing {} (dollars per million tokens)", sheet_name(provider), required);
    auto input = price_field(j, "input_per_mtok", provider);
    if (!input) return Unexpected<Error>{input.error()};
    auto output = price_field(j, "output_per_mtok", provider);
    if (!output) return Unexpected<Error>{output.error()};
    s.input_per_mtok = *input;
    s.output_per_mtok = *output;
    s.cached_input_per_mtok = s.cache_write_per_mtok = s.input_per_mtok;
    if (j.contains("cached_input_per_mtok")) {
      auto v = price_field(j, "cached_input_per_mtok", provider);
      if (!v) return Unexpected<Error>{v.error()};
      s.cached_input_per_mtok = *v;
    }
    if (j.contains("cache_write_per_mtok")) {
      auto v = price_field(j, "cache_write_per_mtok", provider);
      if (!v) return Unexpected<Error>{v.error()};
      s.cache_write_per_mtok = *v;
    }
    return s;
  }
  s.per_gpu_hour = true;
  if (!j.contains("usd_per_gpu_hour"))
    return fail("{}: gpus without usd_per_gpu_hour; set the price of one GPU-hour in dollars",
                sheet_name(provider));
  auto hourly = price_field(j, "usd_per_gpu_hour", provider);
  if (!hourly) return Unexpected<Error>{hourly.error()};
  s.usd_per_gpu_hour = *hourly;
  if (auto it = j.find("gpus"); it != j.end()) {
    double g = it->is_number() ? it->get<double>() : -1;
    if (!it->is_number() || g != std::floor(g) || g < 1 || g > kMaxGpus)
      return fail("{}: gpus must be a whole number from 1 to {}, got {}", sheet_name(provider),
                  kMaxGpus, it->dump());
    s.gpus = static_cast<int>(g);
  }
  return s;
}

std::string known_providers(const json& providers) {
  std::string out;
  for (auto it = providers.begin(); it != providers.end(); ++it) {
    if (!out.empty()) out += ", ";
    out += it.key();
  }
  return out.empty() ? std::string("none") : out;
}

double safe_div(double a, double b) { return b != 0 ? a / b : 0; }

// The terms of one token bill at some cached count; writes are the same in every scenario.
struct TokenTerms {
  std::uint64_t uncached = 0;
  bool clamped = false;
  double input_usd = 0, cached_usd = 0, write_usd = 0, output_usd = 0;
  double total() const { return input_usd + cached_usd + write_usd + output_usd; }
};

TokenTerms token_terms(const PriceSheet& s, std::uint64_t prompt, std::uint64_t cached,
                       std::uint64_t writes, std::uint64_t completion) {
  TokenTerms t;
  std::uint64_t taken = cached + writes;
  t.clamped = taken > prompt;
  t.uncached = t.clamped ? 0 : prompt - taken;
  t.input_usd = static_cast<double>(t.uncached) * s.input_per_mtok / 1e6;
  t.cached_usd = static_cast<double>(cached) * s.cached_input_per_mtok / 1e6;
  t.write_usd = static_cast<double>(writes) * s.cache_write_per_mtok / 1e6;
  t.output_usd = static_cast<double>(completion) * s.output_per_mtok / 1e6;
  return t;
}

void token_bill(const PriceSheet& s, const BillInput& in, Bill& b) {
  auto& lines = b.arithmetic;
  const std::uint64_t p = in.prompt_tokens, c = in.cached_tokens, w = in.cache_creation_tokens,
                      o = in.completion_tokens;
  const double total_tokens = static_cast<double>(p) + static_cast<double>(o);
  const double h = b.measured_hit_rate;

  TokenTerms m = token_terms(s, p, c, w, o);
  b.run_usd = m.total();
  std::string subtracted = fmt::format("{} - {} cached", grouped(p), grouped(c));
  if (w > 0) subtracted += fmt::format(" - {} cache writes", grouped(w));
  if (m.clamped) subtracted += ", clamped at 0";
  lines.push_back(fmt::format("input: ({}) x {}/Mtok = {}", subtracted, price(s.input_per_mtok),
                              usd(m.input_usd)));
  lines.push_back(fmt::format("cached input: {} x {}/Mtok = {}", grouped(c),
                              price(s.cached_input_per_mtok), usd(m.cached_usd)));
  lines.push_back(fmt::format("cache writes: {} x {}/Mtok = {}", grouped(w),
                              price(s.cache_write_per_mtok), usd(m.write_usd)));
  lines.push_back(fmt::format("output: {} x {}/Mtok = {}", grouped(o), price(s.output_per_mtok),
                              usd(m.output_usd)));
  lines.push_back(fmt::format("run: {} + {} + {} + {} = {}", usd(m.input_usd), usd(m.cached_usd),
                              usd(m.write_usd), usd(m.output_usd), usd(b.run_usd)));

  b.run_usd_no_cache =
      (static_cast<double>(p) * s.input_per_mtok + static_cast<double>(o) * s.output_per_mtok) /
      1e6;
  double saved = b.run_usd_no_cache - b.run_usd;
  lines.push_back(
      fmt::format("without cache: {} x {}/Mtok + {} x {}/Mtok = {} (the cache {} {}, {} of the "
                  "bill without it)",
                  grouped(p), price(s.input_per_mtok), grouped(o), price(s.output_per_mtok),
                  usd(b.run_usd_no_cache), saved >= 0 ? "saved" : "cost", usd(std::fabs(saved)),
                  pct(safe_div(std::fabs(saved), b.run_usd_no_cache))));

  b.input_usd_per_mtok_effective = (1 - h) * s.input_per_mtok + h * s.cached_input_per_mtok;
  if (p > 0)
    lines.push_back(fmt::format(
        "hit rate: {} / {} = {}; effective input price: (1 - {:.4f}) x {} + {:.4f} x {} = {}/Mtok",
        grouped(c), grouped(p), pct(h), h, price(s.input_per_mtok), h,
        price(s.cached_input_per_mtok), usd(b.input_usd_per_mtok_effective)));
  else
    lines.push_back(fmt::format(
        "hit rate: no prompt tokens, taken as 0%; effective input price = input price {}/Mtok",
        price(s.input_per_mtok)));

  b.usd_per_mtok = safe_div(b.run_usd, total_tokens) * 1e6;
  b.usd_per_mtok_output = safe_div(b.run_usd, static_cast<double>(o)) * 1e6;
  if (total_tokens > 0)
    lines.push_back(fmt::format("per token: {} / {} tokens (prompt + completion) x 1e6 = {}/Mtok",
                                usd(b.run_usd), grouped(p + o), usd(b.usd_per_mtok)));
  else
    lines.push_back("per token: no tokens, so no $/Mtok (written as 0)");
  if (o > 0)
    lines.push_back(fmt::format("per output token: {} / {} completion tokens x 1e6 = {}/Mtok",
                                usd(b.run_usd), grouped(o), usd(b.usd_per_mtok_output)));
  else
    lines.push_back(
        "per output token: no completion tokens, so no $/Mtok of output (written as 0)");

  // The reference: the same prompt and completion tokens; only the split of the prompt between
  // cache reads and full-price input changes. Cache writes are kept as measured.
  std::uint64_t ref_cached =
      static_cast<std::uint64_t>(std::llround(b.reference_hit_rate * static_cast<double>(p)));
  TokenTerms r = token_terms(s, p, ref_cached, w, o);
  b.run_usd_at_reference = r.total();
  lines.push_back(fmt::format(
      "reference at {} hit rate: cached = round({} x {}) = {}; cache writes unchanged at {}; "
      "uncached = {} - {} - {} = {}{}",
      pct(b.reference_hit_rate), b.reference_hit_rate, grouped(p), grouped(ref_cached), grouped(w),
      grouped(p), grouped(ref_cached), grouped(w), grouped(r.uncached),
      r.clamped ? " (clamped at 0)" : ""));
  lines.push_back(fmt::format(
      "reference run: {} x {}/Mtok + {} x {}/Mtok + {} x {}/Mtok + {} x {}/Mtok = {} + {} + {} "
      "+ {} = {}",
      grouped(r.uncached), price(s.input_per_mtok), grouped(ref_cached),
      price(s.cached_input_per_mtok), grouped(w), price(s.cache_write_per_mtok), grouped(o),
      price(s.output_per_mtok), usd(r.input_usd), usd(r.cached_usd), usd(r.write_usd),
      usd(r.output_usd), usd(b.run_usd_at_reference)));

  if (in.monthly_mtok > 0) {
    double ref_per_mtok = safe_div(b.run_usd_at_reference, total_tokens) * 1e6;
    b.monthly_usd = b.usd_per_mtok * in.monthly_mtok;
    b.monthly_usd_at_reference = ref_per_mtok * in.monthly_mtok;
    if (total_tokens > 0) {
      lines.push_back(fmt::format("monthly: {}/Mtok x {} Mtok = {} (the given monthly volume)",
                                  usd(b.usd_per_mtok), num(in.monthly_mtok), usd(b.monthly_usd)));
      lines.push_back(
          fmt::format("reference monthly: {} / {} tokens x 1e6 = {}/Mtok x {} Mtok = {}",
                      usd(b.run_usd_at_reference), grouped(p + o), usd(ref_per_mtok),
                      num(in.monthly_mtok), usd(b.monthly_usd_at_reference)));
    } else {
      lines.push_back(
          "monthly: not projected (written as 0): the run has no tokens to price a million by");
    }
  } else if (in.duration_s > 0) {
    double scale = kMonthS / in.duration_s;
    b.monthly_usd = b.run_usd * scale;
    b.monthly_usd_at_reference = b.run_usd_at_reference * scale;
    lines.push_back(
        fmt::format("monthly: {} x {} s / {} s = {} (this run's token rate sustained for 30 days)",
                    usd(b.run_usd), grouped(static_cast<std::uint64_t>(kMonthS)),
                    num(in.duration_s), usd(b.monthly_usd)));
    lines.push_back(fmt::format("reference monthly: {} x {} s / {} s = {}",
                                usd(b.run_usd_at_reference),
                                grouped(static_cast<std::uint64_t>(kMonthS)), num(in.duration_s),
                                usd(b.monthly_usd_at_reference)));
  } else {
    lines.push_back(
        "monthly: not projected (written as 0): the run's duration is 0, so it has no token rate "
        "to "
        "sustain; give a monthly volume in Mtok instead");
  }

  if (b.run_usd_at_reference > 0) {
    b.ratio_to_reference = b.run_usd / b.run_usd_at_reference;
    lines.push_back(fmt::format("measured / reference: {} / {} = {:.2f}x", usd(b.run_usd),
                                usd(b.run_usd_at_reference), b.ratio_to_reference));
  } else {
    b.ratio_to_reference = b.run_usd == 0 ? 1 : 0;
    lines.push_back(
        fmt::format("measured / reference: the reference bill is $0, ratio written as {}",
                    b.ratio_to_reference));
  }
}

void gpu_bill(const PriceSheet& s, const BillInput& in, Bill& b) {
  auto& lines = b.arithmetic;
  const std::uint64_t p = in.prompt_tokens, c = in.cached_tokens, o = in.completion_tokens;
  const double total_tokens = static_cast<double>(p) + static_cast<double>(o);
  const double duration = std::max(in.duration_s, 0.0);
  const double gpu_hours = s.gpus * duration / 3600;

  b.run_usd = s.usd_per_gpu_hour * gpu_hours;
  b.run_usd_no_cache = b.run_usd;
  b.input_usd_per_mtok_effective = 0;
  lines.push_back(fmt::format("GPU time: {} GPU{} x {} s / 3,600 s/h = {} GPU-h", s.gpus,
                              s.gpus == 1 ? "" : "s", num(duration), num(gpu_hours, 6)));
  lines.push_back(fmt::format("run: {} GPU-h x {}/GPU-h = {}", num(gpu_hours, 6),
                              price(s.usd_per_gpu_hour), usd(b.run_usd)));

  b.usd_per_mtok = safe_div(b.run_usd, total_tokens) * 1e6;
  double per_gpu_tok_s = duration > 0 ? static_cast<double>(o) / duration / s.gpus : 0;
  if (per_gpu_tok_s > 0) {
    b.usd_per_mtok_output = s.usd_per_gpu_hour / (per_gpu_tok_s * 3600) * 1e6;
    lines.push_back(
        fmt::format("output throughput: {} completion tokens / {} s / {} GPU{} = {} tok/s/GPU",
                    grouped(o), num(duration), s.gpus, s.gpus == 1 ? "" : "s", num(per_gpu_tok_s)));
    lines.push_back(
        fmt::format("per output token: {}/GPU-h / ({} tok/s/GPU x 3,600 s/h) x 1e6 = {}/Mtok",
                    price(s.usd_per_gpu_hour), num(per_gpu_tok_s), usd(b.usd_per_mtok_output)));
  } else {
    lines.push_back(
        "per output token: no output throughput (no completion tokens or no duration), so no "
        "$/Mtok of "
        "output (written as 0)");
  }
  if (total_tokens > 0 && duration > 0)
    lines.push_back(fmt::format("per token: {} / {} tokens (prompt + completion) x 1e6 = {}/Mtok",
                                usd(b.run_usd), grouped(p + o), usd(b.usd_per_mtok)));
  else
    lines.push_back("per token: no tokens or no duration, so no $/Mtok (written as 0)");

  if (p > 0)
    lines.push_back(fmt::format(
        "hit rate: {} / {} = {}; a GPU-hour costs the same at any hit rate: the cache shows in "
        "throughput (tok/s per GPU) and through it in $/Mtok",
        grouped(c), grouped(p), pct(b.measured_hit_rate)));

  if (in.monthly_mtok > 0) {
    b.monthly_usd = b.usd_per_mtok * in.monthly_mtok;
    if (b.usd_per_mtok > 0)
      lines.push_back(fmt::format(
          "monthly: {}/Mtok x {} Mtok = {} (the given monthly volume at this run's throughput)",
          usd(b.usd_per_mtok), num(in.monthly_mtok), usd(b.monthly_usd)));
    else
      lines.push_back(
          "monthly: not projected (written as 0): the run has no $/Mtok to price the monthly "
          "volume by");
  } else {
    // Renting the endpoint's GPUs for a month costs the same whatever the run measured (and equals
    // run_usd x 30 days / duration when the run has a duration).
    b.monthly_usd = s.usd_per_gpu_hour * s.gpus * kMonthH;
    lines.push_back(fmt::format(
        "monthly: {} GPU{} x {}/GPU-h x {} h = {} (the endpoint's GPUs for 30 days)", s.gpus,
        s.gpus == 1 ? "" : "s", price(s.usd_per_gpu_hour), num(kMonthH), usd(b.monthly_usd)));
  }

  b.run_usd_at_reference = b.run_usd;
  b.monthly_usd_at_reference = b.monthly_usd;
  b.ratio_to_reference = 1;
  lines.push_back(fmt::format(
      "reference at {} hit rate: same as measured (ratio 1): on GPU-hour pricing the hit rate "
      "shows in throughput, not in the price; only a run that reaches that hit rate can "
      "measure the throughput it buys",
      pct(b.reference_hit_rate)));
}

double finite_or_zero(double x) { return std::isfinite(x) ? x : 0; }

Result<double> number_field(const json& j, std::string_view field, bool null_is_zero = false) {
  auto it = j.find(std::string(field));
  if (it == j.end()) return fail("bill: missing {}", field);
  if (it->is_null() && null_is_zero) return 0.0;
  if (!it->is_number()) return fail("bill: {} must be a number, got {}", field, it->dump());
  return it->get<double>();
}

}  // namespace

Result<PriceSheet> parse_price_sheet(std::string_view text, std::string_view provider) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return fail(
        "parse price file: not JSON ({}); see docs/schemas/endpoint-bench.md for the format",
        e.what());
  }
  if (!j.is_object())
    return fail("parse price file: expected a JSON object, got {}", j.type_name());

  auto schema = j.find("schema");
  auto providers = j.find("providers");
  if (schema != j.end() && !(schema->is_string() && schema->get<std::string>() == kPricesSchema))
    return fail("parse price file: schema is {}, expected \"{}\"", schema->dump(), kPricesSchema);
  if (providers == j.end()) {
    if (schema != j.end())
      return fail("parse price file: a {} file needs a \"providers\" object of NAME: sheet",
                  kPricesSchema);
    return parse_sheet(j, std::string(provider));
  }
  if (!providers->is_object())
    return fail("parse price file: \"providers\" must be an object of NAME: sheet, got {}",
                providers->type_name());
  if (provider.empty()) {
    if (providers->size() == 1) {
      auto only = providers->begin();
      auto sheet = parse_sheet(only.value(), only.key());
      if (sheet) sheet->provider = only.key();
      return sheet;
    }
    return fail("price file has {} providers; choose one with --provider (known: {})",
                providers->size(), known_providers(*providers));
  }
  auto it = providers->find(std::string(provider));
  if (it == providers->end())
    return fail(
        "price file has no provider {} (known: {}); pass one of those with --provider or add its "
        "prices",
        provider, known_providers(*providers));
  auto sheet = parse_sheet(*it, std::string(provider));
  if (sheet)
    sheet->provider = std::string(provider);  // the map's key names it, whatever the sheet says
  return sheet;
}

Bill compute_bill(const PriceSheet& sheet, const BillInput& in) {
  Bill b;
  b.reference_hit_rate = std::clamp(finite_or_zero(in.reference_hit_rate), 0.0, 1.0);
  b.measured_hit_rate = in.prompt_tokens > 0
                            ? std::min(1.0, static_cast<double>(in.cached_tokens) /
                                                static_cast<double>(in.prompt_tokens))
                            : 0;
  BillInput clean = in;
  clean.duration_s = finite_or_zero(in.duration_s);
  clean.monthly_mtok = finite_or_zero(in.monthly_mtok);
  if (sheet.per_gpu_hour)
    gpu_bill(sheet, clean, b);
  else
    token_bill(sheet, clean, b);
  return b;
}

nlohmann::json bill_to_json(const PriceSheet& sheet, const Bill& bill) {
  json j = json::object();
  j["provider"] = sheet.provider;
  j["kind"] = sheet.per_gpu_hour ? "gpu_hour" : "tokens";
  if (sheet.per_gpu_hour)
    j["prices"] = {{"usd_per_gpu_hour", sheet.usd_per_gpu_hour}, {"gpus", sheet.gpus}};
  else
    j["prices"] = {{"input_per_mtok", sheet.input_per_mtok},
                   {"cached_input_per_mtok", sheet.cached_input_per_mtok},
                   {"cache_write_per_mtok", sheet.cache_write_per_mtok},
                   {"output_per_mtok", sheet.output_per_mtok}};
  auto put = [&](const char* key, double x) { j[key] = finite_or_zero(x); };
  put("measured_hit_rate", bill.measured_hit_rate);
  put("run_usd", bill.run_usd);
  put("run_usd_no_cache", bill.run_usd_no_cache);
  put("monthly_usd", bill.monthly_usd);
  put("reference_hit_rate", bill.reference_hit_rate);
  put("run_usd_at_reference", bill.run_usd_at_reference);
  put("monthly_usd_at_reference", bill.monthly_usd_at_reference);
  put("ratio_to_reference", bill.ratio_to_reference);
  put("usd_per_mtok", bill.usd_per_mtok);
  put("usd_per_mtok_output", bill.usd_per_mtok_output);
  // Not defined for GPU-hour pricing: null rather than a misleading $0.
  if (sheet.per_gpu_hour)
    j["input_usd_per_mtok_effective"] = nullptr;
  else
    put("input_usd_per_mtok_effective", bill.input_usd_per_mtok_effective);
  j["arithmetic"] = bill.arithmetic;
  return j;
}

Result<Bill> bill_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return fail("bill: expected an object, got {}", j.type_name());
  Bill b;
  struct Field {
    std::string_view name;
    double Bill::*member;
    bool null_is_zero;
  };
  static constexpr Field kFields[] = {
      {"measured_hit_rate", &Bill::measured_hit_rate, false},
      {"run_usd", &Bill::run_usd, false},
      {"run_usd_no_cache", &Bill::run_usd_no_cache, false},
      {"monthly_usd", &Bill::monthly_usd, false},
      {"reference_hit_rate", &Bill::reference_hit_rate, false},
      {"run_usd_at_reference", &Bill::run_usd_at_reference, false},
      {"monthly_usd_at_reference", &Bill::monthly_usd_at_reference, false},
      {"ratio_to_reference", &Bill::ratio_to_reference, false},
      {"usd_per_mtok", &Bill::usd_per_mtok, false},
      {"usd_per_mtok_output", &Bill::usd_per_mtok_output, false},
      {"input_usd_per_mtok_effective", &Bill::input_usd_per_mtok_effective, true},
  };
  for (const Field& f : kFields) {
    auto v = number_field(j, f.name, f.null_is_zero);
    if (!v) return Unexpected<Error>{v.error()};
    b.*f.member = *v;
  }
  if (auto it = j.find("arithmetic"); it != j.end() && !it->is_null()) {
    if (!it->is_array())
      return fail("bill: arithmetic must be an array of strings, got {}", it->type_name());
    for (const auto& line : *it) {
      if (!line.is_string())
        return fail("bill: arithmetic must be an array of strings, got {}", line.dump());
      b.arithmetic.push_back(line.get<std::string>());
    }
  }
  return b;
}

}  // namespace cmax::loadgen
