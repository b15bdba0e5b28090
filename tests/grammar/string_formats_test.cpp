// String formats: known good and bad values, and random strings of each
// format checked by the C library and std::chrono (dates on the calendar,
// addresses inet_pton reads) or by the RFC's grammar as a std::regex.
#include "text/grammar/string_formats.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>

#include "grammar/matching.h"
#include "text/grammar/json_grammar.h"
#include "util/error.h"

namespace qinfer::grammar {
namespace {

std::shared_ptr<const Grammar> format_grammar(const std::string& name) {
  return std::make_shared<const Grammar>(json_schema_grammar({{"type", "string"}, {"format", name}}));
}

bool has(const std::string& format, const std::string& value) {
  return matches(format_grammar(format), nlohmann::json(value).dump());
}

bool calendar_date(const std::string& s) {  // YYYY-MM-DD
  const std::chrono::year_month_day ymd{std::chrono::year(std::stoi(s.substr(0, 4))),
                                        std::chrono::month(static_cast<unsigned>(std::stoi(s.substr(5, 2)))),
                                        std::chrono::day(static_cast<unsigned>(std::stoi(s.substr(8, 2))))};
  return ymd.ok() && s.substr(0, 4) != "0000";
}

TEST(StringFormat, DatesAreOnTheCalendar) {
  for (const char* ok : {"2024-02-29", "2000-02-29", "0004-02-29", "2023-12-31", "1999-04-30", "0001-01-01"})
    EXPECT_TRUE(has("date", ok)) << ok;
  for (const char* bad : {"2023-02-29", "1900-02-29", "2023-04-31", "2023-13-01", "2023-00-10", "0000-01-01",
                          "2023-1-01", "2023-01-32", "20230101"})
    EXPECT_FALSE(has("date", bad)) << bad;
  std::mt19937 rng(3);
  const auto g = format_grammar("date");
  for (int i = 0; i < 300; ++i) {
    const std::string doc = random_match(g, rng, 40, 1);
    ASSERT_FALSE(doc.empty());
    const std::string s = nlohmann::json::parse(doc).get<std::string>();
    ASSERT_TRUE(calendar_date(s)) << s;
  }
}

TEST(StringFormat, TimesAndDateTimesCarryAnOffset) {
  for (const char* ok : {"23:59:59Z", "00:00:00+05:30", "12:30:00.123456-08:00"}) EXPECT_TRUE(has("time", ok)) << ok;
  for (const char* bad : {"24:00:00Z", "12:60:00Z", "12:00:60Z", "12:00:00", "12:00Z", "1:00:00Z", "12:00:00+5:30"})
    EXPECT_FALSE(has("time", bad)) << bad;
  EXPECT_TRUE(has("date-time", "2024-02-29T23:59:59.5Z"));
  EXPECT_FALSE(has("date-time", "2023-02-29T23:59:59Z"));
  EXPECT_FALSE(has("date-time", "2024-01-01 10:00:00Z"));
  const std::regex time(R"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))");
  std::mt19937 rng(4);
  const auto g = format_grammar("date-time");
  for (int i = 0; i < 200; ++i) {
    const std::string s = nlohmann::json::parse(random_match(g, rng, 60, 1)).get<std::string>();
    ASSERT_EQ(s[10], 'T') << s;
    ASSERT_TRUE(calendar_date(s.substr(0, 10))) << s;
    ASSERT_TRUE(std::regex_match(s.substr(11), time)) << s;
  }
}

TEST(StringFormat, AddressesAreWhatInetPtonReads) {
  for (const char* ok : {"0.0.0.0", "255.255.255.255", "192.168.1.10"}) EXPECT_TRUE(has("ipv4", ok)) << ok;
  for (const char* bad : {"256.1.1.1", "01.1.1.1", "1.1.1", "1.1.1.1.1", "1..1.1"})
    EXPECT_FALSE(has("ipv4", bad)) << bad;
  EXPECT_TRUE(has("ipv6", "2001:db8:0:0:0:ff00:42:8329"));
  EXPECT_FALSE(has("ipv6", "2001:db8::1"));  // the full form only
  std::mt19937 rng(5);
  for (const char* format : {"ipv4", "ipv6"}) {
    const auto g = format_grammar(format);
    for (int i = 0; i < 200; ++i) {
      const std::string s = nlohmann::json::parse(random_match(g, rng, 60, 1)).get<std::string>();
      unsigned char buf[16];
      ASSERT_EQ(inet_pton(format[3] == '4' ? AF_INET : AF_INET6, s.c_str(), buf), 1) << s;
    }
  }
}

TEST(StringFormat, TheOthersFollowTheirRfcs) {
  const std::vector<std::tuple<std::string, std::regex, std::vector<std::string>, std::vector<std::string>>> cases = {
      {"uuid",
       std::regex("[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}"),
       {"123e4567-e89b-12d3-a456-426614174000"},
       {"123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g"}},
      {"email",
       std::regex(
           R"([\w%+-]+(\.[\w%+-]+)?@[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*\.[a-zA-Z]{2,})"),
       {"ann.lee@example.co.uk", "a+b@x-y.io"},
       // A re-hunt: special-use domains email-validator refuses.
       {"a@b", "@x.io", "a@.io", "a..b@x.io", "a@-x.io", "a@x-.io", "a@x.local", "a@x.test", "a@x.onion"}},
      {"hostname",
       std::regex(R"([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*)"),
       {"example.com", "a", "x-1.b2"},
       // A re-hunt: a last label of digits is an IPv4 address to URL parsers.
       {"-a.com", "a-.com", "a..b", ".a", "a.999", "300.1.1.1", "1a.0"}},
      {"uri",
       std::regex(
           R"(https?://[a-zA-Z0-9.-]+(:[1-9]\d*)?(/([\w.~!$&'()*+,;=:@/-]|%[0-9a-fA-F]{2})*)?(\?([\w.~!$&'()*+,;=:@/?-]|%[0-9a-fA-F]{2})*)?(#([\w.~!$&'()*+,;=:@/?-]|%[0-9a-fA-F]{2})*)?)"),
       {"https://example.com/a/b?x=1&y=%20#top", "http://h:8080"},
       {"ftp://x.com", "https://", "https://x.com/a b", "https://x.com/%zz", "http://h:65536", "http://h:0",
        "http://99.9.9.9.9.99", "http://a.999"}},
      {"duration",
       std::regex(
           R"(P((\d+D|\d+M(\d+D)?|\d+Y(\d+M(\d+D)?)?)(T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S))?|T(\d+H(\d+M(\d+S)?)?|\d+M(\d+S)?|\d+S)|\d+W))"),
       {"P1Y2M3DT4H5M6S", "PT0S", "P3W", "P1D", "P999999W"},
       // A re-hunt: Pydantic's timedelta refuses 999,999,999 days.
       {"P", "PT", "P1Y2D", "P1S", "1Y", "P999999999W", "PT1234567S"}}};
  std::mt19937 rng(6);
  for (const auto& [format, re, good, bad] : cases) {
    for (const std::string& s : good) EXPECT_TRUE(has(format, s)) << format << " " << s;
    for (const std::string& s : bad) EXPECT_FALSE(has(format, s)) << format << " " << s;
    const auto g = format_grammar(format);
    for (int i = 0; i < 200; ++i) {
      const std::string doc = random_match(g, rng, 3000, 2);
      ASSERT_FALSE(doc.empty()) << format;
      const std::string s = nlohmann::json::parse(doc).get<std::string>();
      ASSERT_TRUE(std::regex_match(s, re)) << format << " " << s;
    }
  }
}

TEST(StringFormat, LengthBoundsAndUnknownFormatsAreRefusedByName) {
  // Pydantic's URL types: minLength 1, maxLength 2083; every uri written fits.
  EXPECT_NO_THROW(json_schema_grammar({{"type", "string"}, {"format", "uri"}, {"minLength", 1}, {"maxLength", 2083}}));
  const auto expect_refused = [](const nlohmann::ordered_json& s, const std::string& words) {
    try {
      json_schema_grammar(s);
      ADD_FAILURE() << "accepted " << s.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  expect_refused({{"type", "string"}, {"format", "uri"}, {"maxLength", 100}}, "/maxLength is below the longest uri");
  expect_refused({{"type", "string"}, {"format", "date"}, {"minLength", 11}}, "/minLength is above the shortest date");
  expect_refused({{"type", "string"}, {"format", "phone"}}, "/format names a format qinfer does not follow: 'phone'");
  expect_refused({{"type", "string"}, {"format", "date"}, {"pattern", "^2"}}, "/format beside pattern");
  expect_refused({{"type", "string"}, {"pattern", "^2"}, {"maxLength", 3}}, "/maxLength beside pattern");
  EXPECT_NE(string_format_names().find("date-time"), std::string::npos);
}

}  // namespace
}  // namespace qinfer::grammar
