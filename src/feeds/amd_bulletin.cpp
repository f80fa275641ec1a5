#include "feeds/amd_bulletin.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/strings.h"
#include "feeds/phrase.h"

namespace cmax::feeds {
namespace {

struct Cell {
  std::string text;
  int rowspan = 1;
};

// Case-insensitive search for a tag opening "<td" / "<th" / "<tr" / "</tr" at or after `from`.
std::size_t find_tag(std::string_view s, std::string_view tag, std::size_t from) {
  for (std::size_t i = s.find('<', from); i != std::string_view::npos; i = s.find('<', i + 1)) {
    if (i + tag.size() + 1 > s.size()) return std::string_view::npos;
    bool match = true;
    for (std::size_t k = 0; k < tag.size() && match; ++k)
      match = std::tolower(static_cast<unsigned char>(s[i + 1 + k])) == tag[k];
    if (!match) continue;
    char after = i + 1 + tag.size() < s.size() ? s[i + 1 + tag.size()] : '>';
    if (after == '>' || after == ' ' || after == '\t' || after == '\n' || after == '\r' || after == '/') return i;
  }
  return std::string_view::npos;
}

std::string decode(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  bool in_tag = false;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (in_tag) {
      if (c == '>') in_tag = false;
      continue;
    }
    if (c == '<') {
      // A line break or a superscript footnote separates words; other tags vanish.
      auto rest = core::to_lower(raw.substr(i, 5));
      if (rest.starts_with("<br") || rest.starts_with("<sup")) out += ' ';
      in_tag = true;
      continue;
    }
    if (c == '&') {
      static const std::pair<std::string_view, std::string_view> entities[] = {
          {"&nbsp;", " "}, {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"},
          {"&trade;", "\u2122"}, {"&#8482;", "\u2122"}, {"&reg;", "\u00ae"}, {"&#174;", "\u00ae"}};
      bool done = false;
      for (auto [e, t] : entities)
        if (raw.substr(i, e.size()) == e) {
          out += t;
          i += e.size() - 1;
          done = true;
          break;
        }
      if (done) continue;
    }
    out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  }
  std::string squeezed;
  for (char c : out)
    if (!(c == ' ' && (squeezed.empty() || squeezed.back() == ' '))) squeezed += c;
  while (!squeezed.empty() && squeezed.back() == ' ') squeezed.pop_back();
  return squeezed;
}

int rowspan_of(std::string_view open_tag) {
  static const std::regex re(R"(rowspan\s*=\s*["']?([0-9]{1,3}))", std::regex::icase);
  std::string t(open_tag);
  std::smatch m;
  if (!std::regex_search(t, m, re)) return 1;
  return std::clamp(std::stoi(m[1].str()), 1, 500);
}

std::vector<std::vector<Cell>> raw_rows(std::string_view table) {
  std::vector<std::vector<Cell>> rows;
  for (std::size_t tr = find_tag(table, "tr", 0); tr != std::string_view::npos;) {
    std::size_t next = find_tag(table, "tr", tr + 3);
    std::string_view row = table.substr(tr, next == std::string_view::npos ? std::string_view::npos : next - tr);
    std::vector<Cell> cells;
    std::size_t pos = 0;
    while (true) {
      std::size_t td = find_tag(row, "td", pos), th = find_tag(row, "th", pos);
      std::size_t open = std::min(td, th);
      if (open == std::string_view::npos) break;
      std::size_t gt = row.find('>', open);
      if (gt == std::string_view::npos) break;
      std::size_t close = std::min({find_tag(row, "/td", gt), find_tag(row, "/th", gt), find_tag(row, "td", gt),
                                    find_tag(row, "th", gt), find_tag(row, "/tr", gt)});
      std::string_view body = row.substr(gt + 1, close == std::string_view::npos ? std::string_view::npos : close - gt - 1);
      cells.push_back({decode(body), rowspan_of(row.substr(open, gt - open))});
      if (close == std::string_view::npos) break;
      pos = close + 1;
    }
    if (!cells.empty()) rows.push_back(std::move(cells));
    tr = next;
  }
  return rows;
}

}  // namespace

std::vector<std::vector<std::string>> html_tables_rows(std::string_view html) {
  std::vector<std::vector<std::string>> out;
  for (std::size_t t = find_tag(html, "table", 0); t != std::string_view::npos;) {
    std::size_t end = find_tag(html, "/table", t);
    std::string_view table = html.substr(t, end == std::string_view::npos ? std::string_view::npos : end - t);
    // Rowspans carry per column: a row's cells fill the columns no earlier cell still spans.
    std::vector<std::pair<std::string, int>> carry;
    for (auto& cells : raw_rows(table)) {
      std::vector<std::string> row;
      std::size_t next = 0;
      for (std::size_t col = 0; next < cells.size() || col < carry.size(); ++col) {
        if (col < carry.size() && carry[col].second > 0) {
          row.push_back(carry[col].first);
          --carry[col].second;
          continue;
        }
        if (next >= cells.size()) break;
        Cell& c = cells[next++];
        if (carry.size() <= col) carry.resize(col + 1);
        carry[col] = {c.text, c.rowspan - 1};
        row.push_back(std::move(c.text));
      }
      out.push_back(std::move(row));
    }
    out.push_back({});  // a table boundary
    if (end == std::string_view::npos) break;
    t = find_tag(html, "table", end + 1);
  }
  return out;
}

Result<FeedDocument> read_amd_bulletin(std::string_view html, std::string_view name) {
  static const std::regex id_re(R"(AMD-SB-[0-9]{3,5})", std::regex::icase);
  FeedDocument out;
  out.kind = "amd-bulletin";
  std::smatch m;
  std::string n(name);
  // The id: the file name's, else the page title's (an index page lists many ids and has none).
  std::string title;
  if (auto t = find_tag(html, "title", 0); t != std::string_view::npos)
    if (auto gt = html.find('>', t), end = find_tag(html, "/title", t); gt != std::string_view::npos && end != std::string_view::npos && end > gt)
      title = decode(html.substr(gt + 1, end - gt - 1));
  if (std::regex_search(n, m, id_re) || std::regex_search(title, m, id_re)) {
    out.id = m[0].str();
    for (auto& ch : out.id) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  if (out.id.empty()) return fail("read AMD bulletin {}: no AMD-SB-NNNN id in its name or title", name);
  const std::string label = fmt::format("AMD {}", out.id);
  const std::string advisory =
      fmt::format("https://www.amd.com/en/resources/product-security/bulletin/{}.html", core::to_lower(out.id));

  static const std::regex model_re(R"(\bMI[0-9]{3}[A-Z]?\b)");
  static const std::regex cve_re(R"(CVE-[0-9]{4}-[0-9]{4,7})");
  static const std::regex rocm_re(R"(\bROCm?\S*\s+([0-9]+(?:\.[0-9]+)+))", std::regex::icase);
  static const std::regex driver_re(R"(Linux GPU Driver\s+([0-9]+(?:\.[0-9]+)+))", std::regex::icase);
  static const std::regex date_re(R"(^[0-9]{4}-[0-9]{2}-[0-9]{2}$)");

  enum class Kind { none, fixes, revisions };
  Kind kind = Kind::none;
  int col_program = -1, col_cve = -1, col_mitigation = -1, col_date = -1;
  struct Row {
    std::vector<std::string> models;
    std::string cve, mitigation, date;
  };
  std::vector<Row> rows;
  std::string revised;
  for (const auto& row : html_tables_rows(html)) {
    if (row.empty()) {
      kind = Kind::none;
      continue;
    }
    // A header row names the columns.
    int program = -1, cve = -1, mitigation = -1, date = -1;
    for (int i = 0; i < static_cast<int>(row.size()); ++i) {
      std::string h = core::to_lower(row[static_cast<std::size_t>(i)]);
      if (h == "program" || h == "product" || h == "products" || h == "affected products") program = i;
      else if (h == "cve" || h == "cve id" || h == "cves") cve = i;
      else if (h == "mitigation" || h == "fix version") mitigation = i;
      else if (h.find("date") != std::string::npos && h.size() < 32) date = i;
    }
    if (program >= 0 && cve >= 0 && mitigation >= 0) {
      kind = Kind::fixes;
      col_program = program, col_cve = cve, col_mitigation = mitigation, col_date = date;
      continue;
    }
    if (date >= 0 && row.size() == 2 && core::to_lower(row[static_cast<std::size_t>(1 - date)]) == "description") {
      kind = Kind::revisions;
      col_date = date;
      continue;
    }
    if (kind == Kind::revisions && col_date < static_cast<int>(row.size())) {
      const std::string& d = row[static_cast<std::size_t>(col_date)];
      if (std::regex_match(d, date_re) && d > revised) revised = d;
    } else if (kind == Kind::fixes) {
      auto at = [&](int i) { return i >= 0 && i < static_cast<int>(row.size()) ? row[static_cast<std::size_t>(i)] : std::string(); };
      Row r;
      std::string program_text = at(col_program);
      if (program_text.find("Instinct") == std::string::npos) continue;  // Radeon, Ryzen, embedded
      for (auto it = std::sregex_iterator(program_text.begin(), program_text.end(), model_re); it != std::sregex_iterator(); ++it)
        r.models.push_back(it->str());
      std::string cve_text = at(col_cve);
      if (std::regex_search(cve_text, m, cve_re)) r.cve = m[0].str();
      r.mitigation = at(col_mitigation);
      r.date = at(col_date);
      if (!r.models.empty()) rows.push_back(std::move(r));
    }
  }
  out.date = revised;
  if (rows.empty()) {
    out.notes.push_back({label, "no AMD Instinct row in a Program | CVE | Mitigation table; nothing read"});
    return out;
  }
  // One fix per (component, model, release); its CVEs gathered.
  std::map<std::tuple<std::string, std::string, std::string>, std::set<std::string>> fixes;
  std::map<std::string, std::set<std::string>> skipped;  // mitigation -> models
  for (const auto& r : rows) {
    std::string lower = core::to_lower(r.mitigation);
    if (lower.find("no fix") != std::string::npos || lower.find("no planned fix") != std::string::npos) {
      out.notes.push_back({label, fmt::format("{} on {}: no fix planned; no floor can cover it", r.cve.empty() ? "a CVE" : r.cve,
                                              fmt::join(r.models, ", "))});
      continue;
    }
    if (std::regex_search(r.mitigation, m, driver_re)) {
      fixes[{"amd-gpu-driver", "", m[1].str()}].insert(r.cve);
    } else if (std::regex_search(r.mitigation, m, rocm_re)) {
      for (const auto& model : r.models) fixes[{"rocm", model, m[1].str()}].insert(r.cve);
    } else {
      for (const auto& model : r.models) skipped[r.mitigation].insert(model);
    }
  }
  for (const auto& [key, cves] : fixes) {
    FeedFix f;
    f.component = std::get<0>(key);
    f.train = std::get<1>(key);
    f.fixed = std::get<2>(key);
    for (const auto& c : cves)
      if (!c.empty()) f.cves.push_back(c);
    f.document = label;
    f.advisory = advisory;
    f.date = out.date;
    out.fixes.push_back(std::move(f));
  }
  for (const auto& [mitigation, models] : skipped)
    out.notes.push_back({label, fmt::format("'{}' on {}: not a release a floors component judges (GIM is the SR-IOV "
                                            "host driver; a firmware bundle alone names no ROCm); skipped",
                                            core::one_line(mitigation, 60), fmt::join(models, ", "))});
  return out;
}

std::vector<std::string> amd_index_gpu_bulletins(std::string_view index_html) {
  static const std::regex id_re(R"(^AMD-SB-[0-9]{3,5}$)", std::regex::icase);
  std::vector<std::string> out;
  int col_id = -1, col_title = -1, col_type = -1;
  for (const auto& row : html_tables_rows(index_html)) {
    if (row.empty()) {
      col_id = col_title = col_type = -1;
      continue;
    }
    bool header = false;
    for (int i = 0; i < static_cast<int>(row.size()); ++i) {
      std::string h = core::to_lower(row[static_cast<std::size_t>(i)]);
      if (h == "amd id") col_id = i, header = true;
      else if (h == "title") col_title = i;
      else if (h == "type") col_type = i;
    }
    if (header || col_id < 0 || col_id >= static_cast<int>(row.size())) continue;
    std::string id(core::trim(row[static_cast<std::size_t>(col_id)]));
    if (!std::regex_match(id, id_re)) continue;
    std::string title = col_title >= 0 && col_title < static_cast<int>(row.size()) ? core::to_lower(row[static_cast<std::size_t>(col_title)]) : "";
    std::string type = col_type >= 0 && col_type < static_cast<int>(row.size()) ? core::to_lower(row[static_cast<std::size_t>(col_type)]) : "";
    if (!type.empty() && type != "security bulletin") continue;
    bool gpu = false;
    for (std::string_view w : {"graphics", "gpu", "instinct", "rocm"}) gpu = gpu || title.find(w) != std::string::npos;
    if (!gpu) continue;
    for (auto& ch : id) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    out.push_back(id);
  }
  return out;
}

}  // namespace cmax::feeds
