// JSON Schema's string formats as grammars of a string's contents (between
// the quotes): date, time, date-time, duration, email, hostname, ipv4, ipv6,
// uri, uuid. Each allows a part of what its RFC allows that strict checkers
// (Python's datetime, ipaddress and uuid, email-validator, RFC 3339 and 3986
// validators) all accept: calendar dates only (February 29 in leap years),
// times with an offset, full-form IPv6, http(s) URIs, hostnames and e-mail
// domains of a bounded number of labels. Contents are ASCII, so their length
// in bytes is their length in characters.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "text/grammar/grammar.h"

namespace qinfer::grammar {

struct StringFormat {
  Expr contents;
  uint32_t min_length, max_length;  // of every string it allows
};

std::optional<StringFormat> string_format(std::string_view name);
// The names string_format() knows, for messages: "date, date-time, ...".
std::string string_format_names();

}  // namespace qinfer::grammar
