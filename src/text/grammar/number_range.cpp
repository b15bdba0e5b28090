#include "text/grammar/number_range.h"

#include <functional>
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

// What follows a magnitude of `length` digits (nullopt: none of that length).
using Suffix = std::function<std::optional<Expr>(size_t length)>;

// Magnitudes a..b (b absent: up to max_digits digits) without leading zeros,
// each followed by suffix(its length) when there is one; nullopt when none.
std::optional<Expr> magnitudes(uint64_t a, std::optional<uint64_t> b, uint32_t max_digits, const Suffix& suffix = {}) {
  const std::string sa = std::to_string(a);
  const size_t top = b ? std::to_string(*b).size() : max_digits;
  std::vector<Expr> alts;
  for (size_t length = sa.size(); length <= top; ++length) {
    std::optional<Expr> after = suffix ? suffix(length) : sequence({});
    if (!after) continue;
    if (!b && length > sa.size() && !suffix) {  // longer than a, no suffix: any, in one
      alts.push_back(sequence({digits('1', '9'), repeat(digits('0', '9'), length - 1, max_digits - 1)}));
      break;
    }
    std::string lo = sa;
    if (length > sa.size()) {  // 10...0
      lo.assign(length, '0');
      lo[0] = '1';
    }
    const std::string hi = b && length == top ? std::to_string(*b) : std::string(length, '9');
    alts.push_back(sequence({same_length(lo, hi), std::move(*after)}));
  }
  if (alts.empty()) return std::nullopt;
  return alts.size() == 1 ? std::move(alts[0]) : choice(std::move(alts));
}

constexpr int64_t kLimit = 1'000'000'000'000'000'000;  // bounds beyond are refused (no overflow below)
// Numbers with a fraction are read as doubles (Python's json, JavaScript):
// their bounds must be doubles exactly, and they are written with at most 15
// digits, so that the double nearest one lies on the same side of a bound.
constexpr int64_t kNumberLimit = int64_t{1} << 53;
constexpr size_t kMaxNumberDigits = 15;

void check(const std::optional<NumberBound>& bound, int64_t limit, const char* why) {
  if (bound && (bound->value > limit || bound->value < -limit))
    fail("a bound beyond +-", limit, " (", bound->value, ") is not followed", why);
}

// "." and digits not all zeros, at most kMaxNumberDigits with the `length`
// before them; nullopt when no digit is left.
std::optional<Expr> fraction(size_t length) {
  if (length >= kMaxNumberDigits) return std::nullopt;
  const size_t n = kMaxNumberDigits - length;
  std::vector<Expr> alts;  // by the first digit that is not 0
  for (size_t zeros = 0; zeros < n; ++zeros)
    alts.push_back(sequence({repeat(literal("0"), zeros, zeros), digits('1', '9'),
                             repeat(digits('0', '9'), 0, static_cast<uint32_t>(n - zeros - 1))}));
  return sequence({literal("."), choice(std::move(alts))});
}

// Integers lo..hi, either side open (lo <= hi when both are there).
std::optional<Expr> integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi, uint32_t max_digits) {
  if (lo && hi && *lo > *hi) return std::nullopt;
  std::vector<Expr> alts;
  if (!lo || *lo < 0) {  // negatives: "-" and magnitudes max(1, -hi) .. -lo
    const uint64_t from = hi && *hi < 0 ? static_cast<uint64_t>(-*hi) : 1;
    alts.push_back(
        sequence({literal("-"), *magnitudes(from, lo ? std::optional<uint64_t>(-*lo) : std::nullopt, max_digits)}));
  }
  if (!hi || *hi >= 0)
    alts.push_back(*magnitudes(lo && *lo > 0 ? *lo : 0, hi ? std::optional<uint64_t>(*hi) : std::nullopt, max_digits));
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
  check(lower, kLimit, "");
  check(upper, kLimit, "");
  auto range = integer_range(inclusive_low(lower), inclusive_high(upper), max_digits);
  if (!range) empty(lower, upper, "integer");
  return std::move(*range);
}

Expr numbers_between(std::optional<NumberBound> lower, std::optional<NumberBound> upper, uint32_t max_digits) {
  const char* why = " for numbers (read as doubles, which hold integers exactly to 2^53)";
  check(lower, kNumberLimit, why);
  check(upper, kNumberLimit, why);
  // x = n.f with a fraction f of at least one digit not 0 lies strictly
  // between n and n + 1 (or -(n + 1) and -n): it is within the bounds when
  // those integers are, whether a bound is exclusive or not.
  std::vector<Expr> alts;
  if (auto whole = integer_range(inclusive_low(lower), inclusive_high(upper), max_digits))
    alts.push_back(sequence({std::move(*whole), optional(sequence({literal("."), repeat(literal("0"), 1)}))}));
  // Positive side: n from max(lower, 0) to upper - 1.
  const int64_t pos_lo = lower && lower->value > 0 ? lower->value : 0;
  if (!upper || upper->value - 1 >= pos_lo)
    if (auto m = magnitudes(static_cast<uint64_t>(pos_lo),
                            upper ? std::optional<uint64_t>(upper->value - 1) : std::nullopt, max_digits, fraction))
      alts.push_back(std::move(*m));
  // Negative side: "-" n with n from max(0, -upper) to -lower - 1.
  const int64_t neg_lo = upper && upper->value < 0 ? -upper->value : 0;
  if (!lower || -lower->value - 1 >= neg_lo)
    if (auto m = magnitudes(static_cast<uint64_t>(neg_lo),
                            lower ? std::optional<uint64_t>(-lower->value - 1) : std::nullopt, max_digits, fraction))
      alts.push_back(sequence({literal("-"), std::move(*m)}));
  if (alts.empty()) empty(lower, upper, "number");
  return alts.size() == 1 ? std::move(alts[0]) : choice(std::move(alts));
}

}  // namespace qinfer::grammar
