#include "server/json_shape.h"

#include <cstdint>
#include <vector>

namespace qinfer::server {

namespace {

// Nesting, and the key comparisons objects cost to parse (50 million: ~0.1 s;
// one object of 10,000 members).
constexpr size_t kMaxJsonDepth = 128;
constexpr int64_t kMaxObjectMembers = 10000;
constexpr int64_t kMaxKeyComparisons = 50'000'000;

}  // namespace

std::optional<std::string> json_shape_problem(std::string_view text) {
  std::vector<int64_t> members;  // per open container: an object's members so far, or -1 for an array
  int64_t comparisons = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    switch (text[i]) {
      case '"':
        for (++i; i < text.size() && text[i] != '"'; ++i)
          if (text[i] == '\\') ++i;
        break;
      case '{':
      case '[':
        members.push_back(text[i] == '{' ? 0 : -1);
        if (members.size() > kMaxJsonDepth) return "is nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
        break;
      case ':':  // a key, compared with those before it (counted as it comes: the object may never close)
        if (members.empty() || members.back() < 0) break;
        comparisons += members.back()++;
        if (comparisons > kMaxKeyComparisons)
          return "holds objects too large to parse (" + std::to_string(members.back()) + " members in one; at most " +
                 std::to_string(kMaxObjectMembers) + " in one object, fewer over several)";
        break;
      case '}':
      case ']':
        if (!members.empty()) members.pop_back();  // else the parser names the error
        break;
      default:
        break;
    }
  }
  return std::nullopt;
}

}  // namespace qinfer::server
