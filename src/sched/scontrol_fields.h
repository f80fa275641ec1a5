#pragma once
// The line format every `scontrol -o show ...` prints: "Key=Value Key2=Value2 ...", one object per
// line. Pure helpers the node, reservation, partition and job parsers share; no I/O.

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace cmax::sched {

/// One Key=Value of a line; `value` is owned because a value may span several tokens.
struct ScontrolField {
  std::string_view key;
  std::string value;
};

/// True when `k` can be a key: a letter, then letters, digits or '_'.
bool is_scontrol_key(std::string_view k);

/// Appends the fields of `text` ("K=V K2=V2 more words K3=V3") to `fields`: a token without a key
/// continues the value before it (OS=, Comment= and Command= may hold spaces). Tokens before the
/// first key are dropped; callers check that the line starts with the key they expect.
void split_scontrol_fields(std::string_view text, std::vector<ScontrolField>& fields);

/// The value of the first field named `key`; nullptr when there is none.
const std::string* find_scontrol_field(const std::vector<ScontrolField>& fields,
                                       std::string_view key);

/// The one non-empty line of `text`, trimmed. No line, or more than one, is an error that names
/// `what` ("node", "reservation"): scontrol asked for one object printed another count.
Result<std::string_view> single_scontrol_line(std::string_view text, std::string_view what);

}  // namespace cmax::sched
