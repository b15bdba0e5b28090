#include "text/added_tokens.h"

#include <algorithm>

namespace qinfer {

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) {
  for (const AddedToken& t : tokens) {
    const auto first = static_cast<uint8_t>(t.content[0]);
    is_first_byte_[first] = any_ = true;
    by_first_byte_[first].push_back({t.content, t.id});
  }
  for (auto& list : by_first_byte_)
    std::stable_sort(list.begin(), list.end(),
                     [](const Candidate& a, const Candidate& b) { return a.content.size() > b.content.size(); });
}

std::optional<AddedTokenMatcher::Match> AddedTokenMatcher::find(std::string_view text, size_t from) const {
  if (!any_) return std::nullopt;
  for (size_t pos = from; pos < text.size(); ++pos) {
    const auto first = static_cast<uint8_t>(text[pos]);
    if (!is_first_byte_[first]) continue;
    for (const Candidate& c : by_first_byte_[first])
      if (text.compare(pos, c.content.size(), c.content) == 0) return Match{pos, pos + c.content.size(), c.id};
  }
  return std::nullopt;
}

}  // namespace qinfer
