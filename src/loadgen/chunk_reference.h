#pragma once
// chunk.cpp's reference reader: nlohmann's SAX parser alone, which parse_stream_data's fast path
// must agree with. Not part of chunk.h's interface; for the unit test, the fuzz target (which checks
// the agreement on every input) and the benchmark (which times it as the anchor).

#include <string_view>

#include "core/result.h"
#include "loadgen/chunk.h"

namespace cmax::loadgen::detail {

enum class JsonDoc { kStream, kBody };
Result<ChunkInfo> parse_json_nlohmann(std::string_view text, JsonDoc doc, bool want_text);

}  // namespace cmax::loadgen::detail
