#pragma once
// cmax report's page: one self-contained HTML document (no scripts, no fetches: a
// Content-Security-Policy of default-src 'none' says so to the browser) with the scorecard, every
// finding with its evidence, and the stage charts as inline SVG; readable on a phone and printable.
// Pure: views in, text out.

#include <string>
#include <vector>

#include "html/views.h"
#include "score/rubric.h"

namespace cmax::html {

struct PageMeta {
  std::string generated_at;  ///< "2026-12-03T19:00:00Z"
  std::string cmax_version;
};

struct Page {
  std::string html;
  std::vector<std::string> charts;  ///< the data-chart names, in page order
  std::vector<std::string> sections;  ///< the section ids, in page order
};

/// The page of one or more runs (several are also shown side by side and ranked).
Page render_page(const std::vector<RunReport>& runs, const score::Rubric& rubric, const PageMeta& meta);

}  // namespace cmax::html
