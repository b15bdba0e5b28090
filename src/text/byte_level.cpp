#include "text/byte_level.h"

#include <array>

#include "util/utf8.h"

namespace qinfer::byte_level {
namespace {

bool stands_for_itself(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); }

struct Alphabet {
  std::array<char32_t, 256> char_of_byte{};
  std::array<int16_t, 0x100 + 68> byte_of_char{};  // the alphabet is U+0000..U+0143; -1: not in it
  Alphabet() {
    byte_of_char.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      char_of_byte[b] = stands_for_itself(b) ? char32_t(b) : next++;
      byte_of_char[char_of_byte[b]] = static_cast<int16_t>(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

char32_t char_of_byte(uint8_t byte) { return alphabet().char_of_byte[byte]; }

std::optional<uint8_t> byte_of_char(char32_t c) {
  const auto& table = alphabet().byte_of_char;
  if (c >= table.size() || table[c] < 0) return std::nullopt;
  return static_cast<uint8_t>(table[c]);
}

std::optional<std::string> to_bytes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    int len;
    const char32_t c = utf8::decode_valid(reinterpret_cast<const unsigned char*>(s.data() + pos), len);
    const auto b = byte_of_char(c);
    if (!b) return std::nullopt;
    out += static_cast<char>(*b);
    pos += len;
  }
  return out;
}

std::string from_bytes(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes) utf8::append_code_point(out, char_of_byte(static_cast<uint8_t>(b)));
  return out;
}

}  // namespace qinfer::byte_level
