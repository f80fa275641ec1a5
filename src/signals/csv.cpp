#include "signals/csv.h"

namespace cmax::signals {
namespace {

// A record ends at LF or CRLF; a lone CR inside a field is data.
std::size_t line_break_at(std::string_view text, std::size_t i) {
  if (text[i] == '\n') return 1;
  if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') return 2;
  if (text[i] == '\r' && i + 1 == text.size()) return 1;  // a final CR of a CRLF-cut file
  return 0;
}

}  // namespace

Result<std::vector<CsvRecord>> parse_csv(std::string_view text) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());

  std::vector<CsvRecord> records;
  CsvRecord record;
  std::string field;
  bool quoted = false;  // the current field was quoted, so it exists even when empty
  std::size_t line = 1;

  auto end_field = [&] {
    record.fields.push_back(std::move(field));
    field.clear();
    quoted = false;
  };
  auto end_record = [&] {
    bool blank = record.fields.empty() && field.empty() && !quoted;
    end_field();
    // RFC 4180 leaves blank lines undefined; no caller wants a record of one empty field.
    if (!blank) records.push_back(std::move(record));
    record = CsvRecord{};
  };

  std::size_t i = 0;
  while (i < text.size()) {
    bool field_start = field.empty() && !quoted;
    if (field_start && record.fields.empty()) record.line = line;
    char c = text[i];
    if (c == '"' && field_start) {
      std::size_t opened = line;
      quoted = true;
      ++i;
      for (;;) {
        if (i == text.size())
          return fail("line {}: quoted field is never closed; add the closing '\"'", opened);
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        if (text[i] == '\n') ++line;
        field += text[i++];
      }
      if (i < text.size() && text[i] != ',' && line_break_at(text, i) == 0)
        return fail(
            "line {}: text after a closing quote; quote the whole field and double inner quotes",
            line);
      continue;
    }
    if (c == ',') {
      end_field();
      ++i;
      continue;
    }
    if (std::size_t len = line_break_at(text, i)) {
      end_record();
      i += len;
      ++line;
      continue;
    }
    field += c;
    ++i;
  }
  if (!record.fields.empty() || !field.empty() || quoted) end_record();
  return records;
}

}  // namespace cmax::signals
