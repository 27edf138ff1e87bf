// Search and filter by name: a case-insensitive substring test, evaluated once per interned string
// so that the per-span check while drawing is a table lookup.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipeprof/trace/trace.h"

namespace pipeprof::viewer {

class NameFilter {
 public:
  // Empty text: the filter is off and everything matches.
  void set_text(std::string_view text);
  const std::string& text() const { return text_; }
  bool active() const { return !needle_.empty(); }

  // Whether `name` contains the text, ignoring ASCII case.
  bool matches(std::string_view name) const;

  // Evaluates the filter on every string of `strings`; call again when the text or the table
  // changes. Then `matches(id)` is a lookup (ids beyond the table are evaluated as no match).
  void prepare(const trace::StringTable& strings);
  bool matches(trace::StrId id) const {
    return !active() || (id < table_.size() && table_[id] != 0);
  }
  // Number of distinct names that match (after prepare()).
  size_t matching_names() const;

 private:
  std::string text_;
  std::string needle_;  // lower-cased, trimmed
  std::vector<uint8_t> table_;
};

}  // namespace pipeprof::viewer
