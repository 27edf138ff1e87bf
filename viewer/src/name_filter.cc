#include "pipeprof/viewer/name_filter.h"

#include <algorithm>
#include <cctype>

namespace pipeprof::viewer {
namespace {

char lower(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

}  // namespace

void NameFilter::set_text(std::string_view text) {
  text_ = std::string(text);
  const auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && is_space(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && is_space(text.back()))
    text.remove_suffix(1);
  needle_.resize(text.size());
  std::transform(text.begin(), text.end(), needle_.begin(), lower);
  table_.clear();
}

bool NameFilter::matches(std::string_view name) const {
  if (!active()) return true;
  const auto it = std::search(name.begin(), name.end(), needle_.begin(), needle_.end(),
                              [](char a, char b) { return lower(a) == b; });
  return it != name.end();
}

void NameFilter::prepare(const trace::StringTable& strings) {
  table_.assign(strings.size(), 0);
  if (!active()) return;
  for (trace::StrId id = 0; id < strings.size(); ++id)
    table_[id] = matches(std::string_view(strings.str(id))) ? 1 : 0;
}

size_t NameFilter::matching_names() const {
  return static_cast<size_t>(std::count(table_.begin(), table_.end(), uint8_t{1}));
}

}  // namespace pipeprof::viewer
