#pragma once
// Stage documents, small and hand-written, for the report tests.

#include <string>

namespace cmax::html::test {

inline constexpr const char* kSlaDoc = R"({"schema": "cmax.sla/1",
  "contract": {"name": "acme", "scope": "rack", "availability_target_percent": 99.5, "currency": "USD"},
  "months": [
    {"month": "2026-04", "totals": {"availability_percent": 99.9, "down_gpu_hours": 312, "credit": 10368},
     "entities": [{"name": "r01", "availability_percent": 99.398148, "down_gpu_hours": 312, "below_target": true,
                   "credit": 10368},
                  {"name": "r02", "availability_percent": 99.9, "down_gpu_hours": 50, "credit": 0}]},
    {"month": "2026-05", "totals": {"availability_percent": 100, "down_gpu_hours": 0, "credit": 0}, "entities": []},
    {"month": "2026-06", "totals": {"availability_percent": 98.0, "down_gpu_hours": 900, "credit": 0},
     "entities": [{"name": "r03", "availability_percent": 93.1, "down_gpu_hours": 900, "below_target": true,
                   "credit": 0}]}],
  "cancellation_rights": [{"name": "r03", "month": "2026-06", "rule": "below_percent",
                           "detail": "availability 93.1000% is below 95%"}],
  "summary": {"credit_total": 10368.0, "currency": "USD", "cancellation_rights": 1}})";

inline constexpr const char* kDrillDoc = R"({"schema": "cmax.drill/1", "drill_id": "3f2a", "scenario": "xid79",
  "title": "GPU fell off the bus", "expect": "reboot_node", "scheduler": "slurm",
  "nodes": [
    {"node": "n1", "stages": [
      {"stage": "detected", "reached": true, "at_ms": 101.1, "lower_ms": 57.3, "verdict": "ok", "threshold_ms": 60000},
      {"stage": "drained", "reached": true, "at_ms": 350, "lower_ms": 300, "verdict": "ok", "threshold_ms": 60000},
      {"stage": "replaced", "reached": true, "at_ms": 1161, "lower_ms": 1100, "verdict": "ok",
       "how": "n3 joined reservation drill"}]},
    {"node": "n2", "stages": [
      {"stage": "detected", "reached": true, "at_ms": 2000, "lower_ms": 1900, "verdict": "slow", "threshold_ms": 1500},
      {"stage": "drained", "reached": false, "verdict": "never", "threshold_ms": 3000}]},
    {"node": "n4", "error": "write /dev/kmsg: permission denied", "stages": []}]})";

inline constexpr const char* kScanDoc = R"({"schema": "cmax.scan/1", "sources": ["kern.log"],
  "incidents": [
    {"node": "g1", "kind": "ib_port", "action": "monitor", "count": 40, "resolved": false, "sample": "a"},
    {"node": "g1", "kind": "xid", "code": 79, "device": "0000:3b:00", "action": "reboot_node", "count": 2,
     "resolved": false, "sample": "NVRM: Xid (PCI:0000:3b:00): 79, <fell off>"},
    {"node": "g2", "kind": "nfs_timeout", "action": "drain", "count": 3, "resolved": true, "sample": "c"},
    {"node": "g2", "kind": "xid", "code": 13, "action": "restart_app", "count": 1, "resolved": false, "sample": "d"}]})";

inline constexpr const char* kClusterDoc = R"({"schema": "cmax.cluster/1", "harness": "slurm", "seconds": 0.95,
  "nodes": [
    {"node": "n1", "status": "ok", "seconds": 0.6, "findings": {"pass": 9, "warn": 1, "fail": 2, "unverified": 0},
     "scan": {"ran": true, "worst_action": "reboot_node"}, "failing": ["security.docker.floor"]},
    {"node": "n3", "status": "unreachable", "detail": "Task launch failed on node n3"}]})";

}  // namespace cmax::html::test
