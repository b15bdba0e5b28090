// A pull reader for the big parts of tokenizer.json (a 150k-entry vocabulary
// and as many merges): building a DOM of the whole 5-11 MB file with
// nlohmann::json takes ~300 ms, reading it in place takes a few. The small
// parts are handed to nlohmann as raw text (raw_value()). Errors name the
// origin (file name) and the byte offset.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qinfer {

class JsonReader {
 public:
  // `text` must outlive the reader.
  JsonReader(std::string_view text, std::string origin);

  // Containers: for (bool more = r.enter('{', '}'); more; more = r.more('}')) { ... }
  bool enter(char open, char close);           // consumes `open`; false (and consumes `close`) when empty
  bool more(char close);                       // consumes ',' (true) or `close` (false)
  std::string_view key(std::string& scratch);  // a member name (as string()) and its ':'

  char peek();  // the next significant character, 0 at the end
  bool null();  // consumes a `null` if one is next
  // The next string, unescaped. Returns a view into the text when it has no
  // escapes, else into `scratch`.
  std::string_view string(std::string& scratch);
  int64_t integer();
  std::string_view raw_value();  // skips one value of any kind, returns its text
  void end();                    // only whitespace may remain

  size_t offset() const { return pos_; }
  [[noreturn]] void error(std::string_view what) const { error_at(pos_, what); }
  [[noreturn]] void error_at(size_t offset, std::string_view what) const;

 private:
  void skip_space();
  size_t char_length() const;
  void expect(char c);
  void unescape(std::string& out);
  char32_t hex4();

  std::string_view text_;
  std::string origin_;
  size_t pos_ = 0;
};

}  // namespace qinfer
