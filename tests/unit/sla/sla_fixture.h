#pragma once
// A one-rack NVL72 contract for the hand-computed SLA cases: site s1, rack r1 of 18 trays
// t01..t18 with 4 GPUs each (72 GPUs), fee 2.00 per GPU-hour, credit tiers 99.5/99/95/90 ->
// 10/25/50/100 %, cancellation below 95 %.

#include <string>

#include <gtest/gtest.h>

#include "sla/compute.h"
#include "sla/contract.h"
#include "sla/parse.h"

namespace cmax::sla::testing {

inline std::string rack_contract(const std::string& scope = "rack", const std::string& rack_rule = R"({"min_down_nodes": 2})",
                                 const std::string& zone = "UTC", const std::string& exclusions = "[]") {
  return R"({"schema": "cmax.sla-contract/1", "name": "test", "scope": ")" + scope + R"(", "time_zone": ")" + zone +
         R"(", "availability_target_percent": 99.5, "gpus_per_node": 4, "rack_down": )" + rack_rule +
         R"(, "topology": {"sites": [{"name": "s1", "racks": [{"name": "r1", "nodes": "t[01-18]"}]}]},
  "exclusions": )" + exclusions + R"(,
  "credits": {"currency": "USD", "fee_per_gpu_hour": 2.0, "tiers": [
    {"below_percent": 99.5, "credit_percent": 10}, {"below_percent": 99.0, "credit_percent": 25},
    {"below_percent": 95.0, "credit_percent": 50}, {"below_percent": 90.0, "credit_percent": 100}]},
  "cancellation": {"below_percent": 95.0, "consecutive_months_below_target": 2}})";
}

inline Contract load(const std::string& json) {
  auto c = parse_contract(json);
  EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message);
  return std::move(*c);
}

/// Runs the CSV through the engine for the months first..last.
inline SlaReport run(const Contract& c, const std::string& csv, YearMonth first, YearMonth last) {
  auto events = parse_events_csv(csv, c.zone);
  EXPECT_TRUE(events.has_value());
  auto w = month_window(c.zone, first, last);
  EXPECT_TRUE(w.has_value());
  return compute_sla(std::move(*events), c, *w);
}

}  // namespace cmax::sla::testing
