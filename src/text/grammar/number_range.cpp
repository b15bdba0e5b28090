#include "text/grammar/number_range.h"

#include <string>
#include <vector>

#include "util/error.h"

namespace qinfer::grammar {
namespace {

Expr digits(char lo, char hi) { return bytes(byte_class(std::string{lo, '-', hi})); }

// The digit strings of lo's length from lo to hi (lo <= hi, both that long):
// one choice per digit where they part, none ambiguous.
Expr same_length(const std::string& lo, const std::string& hi) {
  if (lo.empty()) return sequence({});
  const std::string lo_rest = lo.substr(1), hi_rest = hi.substr(1);
  if (lo[0] == hi[0]) return sequence({digits(lo[0], lo[0]), same_length(lo_rest, hi_rest)});
  const bool lo_rest_lowest = lo_rest.find_first_not_of('0') == std::string::npos;
  const bool hi_rest_highest = hi_rest.find_first_not_of('9') == std::string::npos;
  std::vector<Expr> alts;
  if (!lo_rest_lowest)
    alts.push_back(sequence({digits(lo[0], lo[0]), same_length(lo_rest, std::string(lo_rest.size(), '9'))}));
  const char first = static_cast<char>(lo[0] + (lo_rest_lowest ? 0 : 1));
  const char last = static_cast<char>(hi[0] - (hi_rest_highest ? 0 : 1));
  if (first <= last)
    alts.push_back(sequence({digits(first, last), repeat(digits('0', '9'), lo_rest.size(), lo_rest.size())}));
  if (!hi_rest_highest)
    alts.push_back(sequence({digits(hi[0], hi[0]), same_length(std::string(hi_rest.size(), '0'), hi_rest)}));
  return alts.size() == 1 ? std::move(alts[0]) : choice(std::move(alts));
}

// Magnitudes a..b (b absent: up to max_digits digits) without leading zeros.
Expr magnitudes(uint64_t a, std::optional<uint64_t> b, uint32_t max_digits) {
  const std::string sa = std::to_string(a);
  const size_t top = b ? std::to_string(*b).size() : sa.size();
  std::vector<Expr> alts;
  for (size_t length = sa.size(); length <= top; ++length) {
    std::string lo = sa;
    if (length > sa.size()) {  // 10...0
      lo.assign(length, '0');
      lo[0] = '1';
    }
    const std::string hi = b && length == top ? std::to_string(*b) : std::string(length, '9');
    alts.push_back(same_length(lo, hi));
  }
  if (!b && sa.size() < max_digits)  // longer than a: any
    alts.push_back(sequence({digits('1', '9'), repeat(digits('0', '9'), sa.size(), max_digits - 1)}));
  return alts.size() == 1 ? std::move(alts[0]) : choice(std::move(alts));
}

constexpr int64_t kLimit = 1'000'000'000'000'000'000;  // bounds beyond are refused (no overflow below)

void check(const std::optional<NumberBound>& bound) {
  if (bound && (bound->value > kLimit || bound->value < -kLimit))
    fail("a bound beyond +-10^18 (", bound->value, ") is not followed");
}

// Integers lo..hi, either side open (lo <= hi when both are there).
std::optional<Expr> integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi, uint32_t max_digits) {
  if (lo && hi && *lo > *hi) return std::nullopt;
  std::vector<Expr> alts;
  if (!lo || *lo < 0) {  // negatives: "-" and magnitudes max(1, -hi) .. -lo
    const uint64_t from = hi && *hi < 0 ? static_cast<uint64_t>(-*hi) : 1;
    alts.push_back(
        sequence({literal("-"), magnitudes(from, lo ? std::optional<uint64_t>(-*lo) : std::nullopt, max_digits)}));
  }
  if (!hi || *hi >= 0)
    alts.push_back(magnitudes(lo && *lo > 0 ? *lo : 0, hi ? std::optional<uint64_t>(*hi) : std::nullopt, max_digits));
  return alts.size() == 1 ? std::move(alts[0]) : choice(std::move(alts));
}

std::optional<int64_t> inclusive_low(const std::optional<NumberBound>& b) {
  return b ? std::optional<int64_t>(b->value + (b->exclusive ? 1 : 0)) : std::nullopt;
}
std::optional<int64_t> inclusive_high(const std::optional<NumberBound>& b) {
  return b ? std::optional<int64_t>(b->value - (b->exclusive ? 1 : 0)) : std::nullopt;
}

[[noreturn]] void empty(const std::optional<NumberBound>& lower, const std::optional<NumberBound>& upper,
                        const char* what) {
  fail("no ", what, " lies ", lower->exclusive ? "above " : "at or above ", lower->value, " and ",
       upper->exclusive ? "below " : "at or below ", upper->value);
}

}  // namespace

Expr integers_between(std::optional<NumberBound> lower, std::optional<NumberBound> upper, uint32_t max_digits) {
  check(lower);
  check(upper);
  auto range = integer_range(inclusive_low(lower), inclusive_high(upper), max_digits);
  if (!range) empty(lower, upper, "integer");
  return std::move(*range);
}

Expr numbers_between(std::optional<NumberBound> lower, std::optional<NumberBound> upper, uint32_t max_digits) {
  check(lower);
  check(upper);
  // x = n.f with a fraction f of at least one digit not 0 lies strictly
  // between n and n + 1 (or -(n + 1) and -n): it is within the bounds when
  // those integers are, whether a bound is exclusive or not.
  const Expr fraction = sequence({literal("."), star(literal("0")), digits('1', '9'), star(digits('0', '9'))});
  std::vector<Expr> alts;
  if (auto whole = integer_range(inclusive_low(lower), inclusive_high(upper), max_digits))
    alts.push_back(sequence({std::move(*whole), optional(sequence({literal("."), repeat(literal("0"), 1)}))}));
  // Positive side: n from max(lower, 0) to upper - 1.
  const int64_t pos_lo = lower && lower->value > 0 ? lower->value : 0;
  if (!upper || upper->value - 1 >= pos_lo)
    alts.push_back(sequence({magnitudes(static_cast<uint64_t>(pos_lo),
                                        upper ? std::optional<uint64_t>(upper->value - 1) : std::nullopt, max_digits),
                             fraction}));
  // Negative side: "-" n with n from max(0, -upper) to -lower - 1.
  const int64_t neg_lo = upper && upper->value < 0 ? -upper->value : 0;
  if (!lower || -lower->value - 1 >= neg_lo)
    alts.push_back(sequence({literal("-"),
                             magnitudes(static_cast<uint64_t>(neg_lo),
                                        lower ? std::optional<uint64_t>(-lower->value - 1) : std::nullopt, max_digits),
                             fraction}));
  if (alts.empty()) empty(lower, upper, "number");
  return alts.size() == 1 ? std::move(alts[0]) : choice(std::move(alts));
}

}  // namespace qinfer::grammar
