#include "text/json_reader.h"

#include <cstring>

#include "util/error.h"
#include "util/utf8.h"

namespace qinfer {

JsonReader::JsonReader(std::string_view text, std::string origin) : text_(text), origin_(std::move(origin)) {}

void JsonReader::error_at(size_t offset, std::string_view what) const { fail(origin_, ": byte ", offset, ": ", what); }

void JsonReader::skip_space() {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
    ++pos_;
  }
}

char JsonReader::peek() {
  skip_space();
  return pos_ < text_.size() ? text_[pos_] : 0;
}

void JsonReader::expect(char c) {
  if (peek() != c) error(std::string("expected '") + c + "'");
  ++pos_;
}

bool JsonReader::enter(char open, char close) {
  expect(open);
  if (peek() == close) {
    ++pos_;
    return false;
  }
  return true;
}

bool JsonReader::more(char close) {
  const char c = peek();
  if (c == ',' || c == close) {
    ++pos_;
    return c == ',';
  }
  error(std::string("expected ',' or '") + close + "'");
}

std::string_view JsonReader::key(std::string& scratch) {
  const std::string_view k = string(scratch);
  expect(':');
  return k;
}

bool JsonReader::null() {
  if (peek() != 'n') return false;
  if (text_.substr(pos_, 4) != "null") error("expected null");
  pos_ += 4;
  return true;
}

std::string_view JsonReader::string(std::string& scratch) {
  expect('"');
  const size_t start = pos_;
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c == '"') return text_.substr(start, pos_++ - start);
    if (c == '\\') {
      scratch.assign(text_.substr(start, pos_ - start));
      unescape(scratch);
      return scratch;
    }
    pos_ += char_length();
  }
  error("unterminated string");
}

// Length of the character at pos_ inside a string: outside strings only
// ASCII is valid JSON, so checking strings checks all the UTF-8.
size_t JsonReader::char_length() const {
  const auto c = static_cast<unsigned char>(text_[pos_]);
  if (c < 0x20) error("control character in string");
  if (c < 0x80) return 1;
  const utf8::Step st = utf8::step(text_, pos_);
  if (st.kind != utf8::Step::kChar) error("invalid UTF-8");
  return st.len;
}

char32_t JsonReader::hex4() {
  if (pos_ + 4 > text_.size()) error("truncated \\u escape");
  char32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = text_[pos_++];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= c - '0';
    else if (c >= 'a' && c <= 'f')
      v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      v |= c - 'A' + 10;
    else
      error("bad hex digit in \\u escape");
  }
  return v;
}

// Continues a string at pos_ (just past its opening part), appending to `out` up to the closing quote.
void JsonReader::unescape(std::string& out) {
  while (pos_ < text_.size()) {
    const char c = text_[pos_];
    if (c == '"') {
      ++pos_;
      return;
    }
    if (c != '\\') {
      const size_t len = char_length();
      out.append(text_.substr(pos_, len));
      pos_ += len;
      continue;
    }
    if (++pos_ >= text_.size()) break;
    const char e = text_[pos_++];
    switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        char32_t cp = hex4();
        if (cp >= 0xDC00 && cp <= 0xDFFF) error("unpaired low surrogate in \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (text_.substr(pos_, 2) != "\\u") error("unpaired high surrogate in \\u escape");
          pos_ += 2;
          const char32_t low = hex4();
          if (low < 0xDC00 || low > 0xDFFF) error("unpaired high surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        utf8::append_code_point(out, cp);
        break;
      }
      default:
        --pos_;
        error("unknown escape");
    }
  }
  error("unterminated string");
}

int64_t JsonReader::integer() {
  skip_space();
  const size_t start = pos_;
  const bool negative = pos_ < text_.size() && text_[pos_] == '-';
  if (negative) ++pos_;
  int64_t v = 0;
  size_t digits = 0;
  while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
    if (++digits > 18) error("integer out of range");
    v = v * 10 + (text_[pos_++] - '0');
  }
  if (digits == 0 || (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E'))) {
    pos_ = start;
    error("expected an integer");
  }
  return negative ? -v : v;
}

std::string_view JsonReader::raw_value() {
  skip_space();
  const size_t start = pos_;
  std::string scratch;
  int depth = 0;
  do {
    const char c = peek();
    if (c == '"') {
      string(scratch);
    } else if (c == '{' || c == '[') {
      ++depth;
      ++pos_;
    } else if (c == '}' || c == ']') {
      if (depth == 0) error("unexpected close bracket");
      --depth;
      ++pos_;
    } else if (c == ',' || c == ':') {
      if (depth == 0) error("unexpected separator");
      ++pos_;
    } else if (c == 0) {
      error("unexpected end of input");
    } else {  // number or literal: well-formedness is left to whoever parses the text
      while (pos_ < text_.size() && std::strchr(",:]} \n\r\t\"", text_[pos_]) == nullptr) ++pos_;
    }
  } while (depth > 0);
  return text_.substr(start, pos_ - start);
}

void JsonReader::end() {
  if (peek() != 0) error("unexpected text after the JSON value");
}

}  // namespace qinfer
