// Per-code-point facts the tokenizer asks in its inner loops, in one two-level
// lookup table:
//  - letter / number / space: \p{L}, \p{N} and \s as Hugging Face tokenizers'
//    regex engine sees them (Unicode 16.0 tables generated from the reference,
//    see unicode_classes.inc);
//  - nfc_safe: NFC_Quick_Check=Yes and canonical combining class 0 in HF's
//    Unicode 9.0 normalization view, so a text made only of such code points
//    is already NFC and needs no normalizer call.
#pragma once
#include <cstdint>
#include <memory>

namespace qinfer::unicode {

enum Flag : uint8_t {
  kLetter = 1,
  kNumber = 2,
  kSpace = 4,
  kNfcSafe = 8,
};

class CodePointTable {
 public:
  static const CodePointTable& get();  // built on first use (a few ms), then shared

  uint8_t flags(char32_t cp) const {
    if (cp < 0x80) return ascii_[cp];
    if (cp > 0x10FFFF) return 0;
    return blocks_[(size_t(block_of_[cp >> kBlockBits]) << kBlockBits) | (cp & kBlockMask)];
  }

 private:
  static constexpr int kBlockBits = 8;
  static constexpr char32_t kBlockMask = (1u << kBlockBits) - 1;
  CodePointTable();
  uint8_t ascii_[128];
  std::unique_ptr<uint16_t[]> block_of_;  // (0x10FFFF >> 8) + 1 entries: index of the block of flags
  std::unique_ptr<uint8_t[]> blocks_;     // distinct 256-entry blocks
};

}  // namespace qinfer::unicode
