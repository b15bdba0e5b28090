#include "text/grammar/string_formats.h"

#include <algorithm>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "text/grammar/number_range.h"

namespace qinfer::grammar {
namespace {

Expr cls(const char* spec) { return bytes(byte_class(spec)); }
Expr lit(const char* text) { return literal(text); }
Expr d() { return cls("0-9"); }
Expr hex() { return cls("0-9a-fA-F"); }
Expr n_times(Expr e, uint32_t n) { return repeat(std::move(e), n, n); }

// The shortest and longest text an expression of bytes (no rules) matches.
std::pair<uint64_t, uint64_t> length_bounds(const Expr& e) {
  constexpr uint64_t kUnbounded = UINT64_MAX;
  switch (e.kind) {
    case Expr::Kind::Bytes:
      return {1, 1};
    case Expr::Kind::Sequence: {
      uint64_t lo = 0, hi = 0;
      for (const Expr& p : e.parts) {
        const auto [plo, phi] = length_bounds(p);
        lo += plo;
        hi = hi == kUnbounded || phi == kUnbounded ? kUnbounded : hi + phi;
      }
      return {lo, hi};
    }
    case Expr::Kind::Choice: {
      uint64_t lo = kUnbounded, hi = 0;
      for (const Expr& p : e.parts) {
        const auto [plo, phi] = length_bounds(p);
        lo = std::min(lo, plo);
        hi = std::max(hi, phi);
      }
      return {lo, hi};
    }
    case Expr::Kind::Repeat: {
      const auto [plo, phi] = length_bounds(e.parts.at(0));
      return {plo * e.min, e.max == Expr::kUnbounded || phi == kUnbounded ? kUnbounded : phi * e.max};
    }
    case Expr::Kind::Rule:
      break;
  }
  return {0, kUnbounded};
}

// Years 0001-9999, and those among them that are leap years.
Expr year() {
  return choice({sequence({lit("000"), cls("1-9")}), sequence({lit("00"), cls("1-9"), d()}),
                 sequence({lit("0"), cls("1-9"), d(), d()}), sequence({cls("1-9"), d(), d(), d()})});
}
Expr leap_year() {
  const Expr by_four = choice(
      {sequence({lit("0"), cls("48")}), sequence({cls("2468"), cls("048")}), sequence({cls("13579"), cls("26")})});
  return choice({sequence({d(), d(), by_four}), sequence({by_four, lit("00")})});
}
Expr full_date() {
  const Expr day_28 =
      choice({sequence({lit("0"), cls("1-9")}), sequence({lit("1"), d()}), sequence({lit("2"), cls("0-8")})});
  const Expr day_30 = choice({sequence({lit("0"), cls("1-9")}), sequence({cls("12"), d()}), lit("30")});
  const Expr day_31 =
      choice({sequence({lit("0"), cls("1-9")}), sequence({cls("12"), d()}), sequence({lit("3"), cls("01")})});
  const Expr month_day = choice(
      {sequence({choice({sequence({lit("0"), cls("13578")}), sequence({lit("1"), cls("02")})}), lit("-"), day_31}),
       sequence({choice({sequence({lit("0"), cls("469")}), lit("11")}), lit("-"), day_30}),
       sequence({lit("02-"), day_28})});
  return choice({sequence({year(), lit("-"), month_day}), sequence({leap_year(), lit("-02-29")})});
}
Expr full_time() {
  const Expr hour = choice({sequence({cls("01"), d()}), sequence({lit("2"), cls("0-3")})});
  const Expr minute = sequence({cls("0-5"), d()});
  const Expr offset = choice({lit("Z"), sequence({cls("+-"), hour, lit(":"), minute})});
  return sequence(
      {hour, lit(":"), minute, lit(":"), minute, optional(sequence({lit("."), repeat(d(), 1, 9)})), offset});
}
// RFC 3339 appendix A (what JSON Schema's "duration" refers to).
Expr duration() {
  const Expr num = repeat(d(), 1, 6);  // Pydantic's timedelta refuses 999,999,999 days
  const Expr second = sequence({num, lit("S")});
  const Expr minute = sequence({num, lit("M"), optional(second)});
  const Expr hour = sequence({num, lit("H"), optional(minute)});
  const Expr time = sequence({lit("T"), choice({hour, minute, second})});
  const Expr day = sequence({num, lit("D")});
  const Expr month = sequence({num, lit("M"), optional(day)});
  const Expr year = sequence({num, lit("Y"), optional(month)});
  const Expr date = sequence({choice({day, month, year}), optional(time)});
  return sequence({lit("P"), choice({date, time, sequence({num, lit("W")})})});
}
// Labels of letters, digits and inner hyphens, up to 40 characters each
// (`first`: the first character's class).
Expr label(const char* first = "a-zA-Z0-9") {
  return sequence({cls(first), optional(sequence({repeat(cls("a-zA-Z0-9-"), 0, 38), cls("a-zA-Z0-9")}))});
}
// The last label starts with a letter: URL parsers (WHATWG's, Pydantic's)
// read a host whose last label is a number ("a.999", "1.2.3.4.5") as IPv4.
Expr hostname() { return sequence({repeat(sequence({label(), lit(".")}), 0, 5), label("a-zA-Z")}); }
// Domains end in a top-level domain of this list: email-validator (Pydantic's
// EmailStr) refuses special-use ones (local, test, invalid, onion, arpa ...).
Expr email() {
  const Expr atom = repeat(cls("a-zA-Z0-9_%+-"), 1, 24);
  std::vector<Expr> tlds;
  for (const char* tld : {"com", "org", "net", "edu", "gov", "io", "dev", "ai", "app", "co", "info", "me", "us", "uk",
                          "de",  "fr",  "es",  "it",  "nl",  "se", "ch",  "jp", "cn",  "in", "br",   "ca", "au"})
    tlds.push_back(lit(tld));
  return sequence({atom, optional(sequence({lit("."), atom})), lit("@"), repeat(sequence({label(), lit(".")}), 1, 4),
                   choice(std::move(tlds))});
}
Expr ipv4() {
  const Expr octet = choice({sequence({lit("25"), cls("0-5")}), sequence({lit("2"), cls("0-4"), d()}),
                             sequence({lit("1"), d(), d()}), sequence({cls("1-9"), d()}), d()});
  return sequence({octet, n_times(sequence({lit("."), octet}), 3)});
}
Expr ipv6() {
  const Expr group = repeat(hex(), 1, 4);
  return sequence({group, n_times(sequence({lit(":"), group}), 7)});
}
Expr uuid() {
  return sequence({n_times(hex(), 8), lit("-"), n_times(hex(), 4), lit("-"), n_times(hex(), 4), lit("-"),
                   n_times(hex(), 4), lit("-"), n_times(hex(), 12)});
}
// http(s) URIs (RFC 3986), at most 1759 characters: within the 2083 that
// Pydantic's URL types allow.
Expr uri() {
  const Expr pchar = choice({cls("a-zA-Z0-9._~!$&'()*+,;=:@-"), sequence({lit("%"), hex(), hex()})});
  const Expr qchar = choice({pchar, cls("/?")});
  return sequence({lit("http"), optional(lit("s")), lit("://"), hostname(),
                   optional(sequence({lit(":"), integers_between(NumberBound{1}, NumberBound{65535}, 5)})),
                   optional(sequence({lit("/"), repeat(choice({pchar, lit("/")}), 0, 199)})),
                   optional(sequence({lit("?"), repeat(qchar, 0, 200)})),
                   optional(sequence({lit("#"), repeat(qchar, 0, 100)}))});
}

const std::map<std::string, std::function<Expr()>, std::less<>>& formats() {
  static const std::map<std::string, std::function<Expr()>, std::less<>> table = {
      {"date", full_date},
      {"time", full_time},
      {"date-time",
       [] {
         return sequence({full_date(), lit("T"), full_time()});
       }},
      {"duration", duration},
      {"email", email},
      {"hostname", hostname},
      {"ipv4", ipv4},
      {"ipv6", ipv6},
      {"uri", uri},
      {"uuid", uuid}};
  return table;
}

}  // namespace

std::optional<StringFormat> string_format(std::string_view name) {
  const auto it = formats().find(name);
  if (it == formats().end()) return std::nullopt;
  Expr contents = it->second();
  const auto [lo, hi] = length_bounds(contents);
  return StringFormat{std::move(contents), static_cast<uint32_t>(lo), static_cast<uint32_t>(hi)};
}

std::string string_format_names() {
  std::string out;
  for (const auto& [name, make] : formats()) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace qinfer::grammar
