#include "loadgen/record.h"

#include <array>

namespace cmax::loadgen {
namespace {

constexpr std::array<std::string_view, kErrorClassCount> kErrorNames = {
    "ok", "http_429", "http_4xx", "http_5xx", "timeout", "connect", "dropped", "protocol", "api_error", "canceled"};

}  // namespace

std::string_view error_class_name(ErrorClass c) { return kErrorNames[static_cast<std::size_t>(c)]; }

bool error_class_from_name(std::string_view name, ErrorClass& out) {
  for (std::size_t i = 0; i < kErrorNames.size(); ++i) {
    if (kErrorNames[i] == name) {
      out = static_cast<ErrorClass>(i);
      return true;
    }
  }
  return false;
}

bool retryable(ErrorClass c) {
  switch (c) {
    case ErrorClass::kHttp429:
    case ErrorClass::kHttp5xx:
    case ErrorClass::kTimeout:
    case ErrorClass::kConnect:
    case ErrorClass::kDropped:
      return true;
    default:
      return false;
  }
}

std::string_view cache_source_name(CacheSource s) {
  switch (s) {
    case CacheSource::kOpenAi: return "openai";
    case CacheSource::kAnthropic: return "anthropic";
    case CacheSource::kDeepSeek: return "deepseek";
    case CacheSource::kNone: break;
  }
  return "none";
}

}  // namespace cmax::loadgen
