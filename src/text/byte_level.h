// The byte-level alphabet of GPT-2 style BPE (the ByteLevel pre-tokenizer
// and decoder of Hugging Face tokenizers): every byte is written as one
// printable character so that vocabulary entries are strings. Printable bytes
// (0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF) stand for themselves; the other 68 bytes
// take U+0100 upwards in byte order (space -> U+0120 'Ġ', '\n' -> U+010A 'Ċ').
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace qinfer::byte_level {

char32_t char_of_byte(uint8_t byte);
std::optional<uint8_t> byte_of_char(char32_t c);

// The bytes that a byte-level string stands for, or nullopt when it holds a
// character outside the alphabet (`s` must be valid UTF-8).
std::optional<std::string> to_bytes(std::string_view s);

// The byte-level string of raw bytes.
std::string from_bytes(std::string_view bytes);

}  // namespace qinfer::byte_level
