#include "loadgen/server_metrics.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace cmax::loadgen {
namespace {

// One sample line: its metric name and value; false when it is not one (comment, blank, garbage).
bool sample(std::string_view line, std::string_view& name, double& value) {
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  if (line.empty() || line.front() == '#') return false;
  std::size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ' && line[i] != '\t') ++i;
  name = line.substr(0, i);
  if (name.empty()) return false;
  if (i < line.size() && line[i] == '{') {  // labels: skip to the closing brace, quotes respected
    bool quoted = false;
    for (++i; i < line.size(); ++i) {
      if (quoted && line[i] == '\\') {
        ++i;
        continue;
      }
      if (line[i] == '"') quoted = !quoted;
      else if (!quoted && line[i] == '}') break;
    }
    if (i >= line.size()) return false;
    ++i;
  }
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  std::size_t end = i;
  while (end < line.size() && line[end] != ' ' && line[end] != '\t') ++end;
  const std::string token(line.substr(i, end - i));
  if (token.empty()) return false;
  char* stop = nullptr;
  value = std::strtod(token.c_str(), &stop);
  return stop == token.c_str() + token.size() && std::isfinite(value);
}

void add(std::optional<double>& to, double v) { to = to.value_or(0) + v; }

}  // namespace

EngineCacheMetrics parse_engine_metrics(std::string_view text) {
  EngineCacheMetrics m;
  std::optional<double> q, h, gq, gh;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string_view name;
    double v = 0;
    if (!sample(line, name, v)) continue;
    if (name == "vllm:prefix_cache_queries_total") add(q, v);
    else if (name == "vllm:prefix_cache_hits_total") add(h, v);
    else if (name == "vllm:gpu_prefix_cache_queries_total") add(gq, v);
    else if (name == "vllm:gpu_prefix_cache_hits_total") add(gh, v);
    else if (name == "sglang:cache_hit_rate" || name == "sglang_cache_hit_rate") m.sglang_hit_rate = v;
  }
  if (q && h) {
    m.queries = q;
    m.hits = h;
    m.family = "vllm";
  } else if (gq && gh) {
    m.queries = gq;
    m.hits = gh;
    m.family = "vllm (gpu_ names)";
  } else if (m.sglang_hit_rate) {
    m.family = "sglang";
  }
  return m;
}

}  // namespace cmax::loadgen
