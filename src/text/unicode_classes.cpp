#include "text/unicode_classes.h"

#include <unicode/uniset.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "util/error.h"

namespace qinfer::unicode {
namespace {

struct CodePointRange {
  char32_t first, last;
};
#include "text/unicode_classes.inc"

constexpr char32_t kCodePoints = 0x110000;

template <size_t N>
void mark(std::vector<uint8_t>& flags, const CodePointRange (&ranges)[N], uint8_t flag) {
  for (const CodePointRange& r : ranges)
    for (char32_t cp = r.first; cp <= r.last; ++cp) flags[cp] |= flag;
}

// HF normalizes with the Unicode 9.0 tables of the unicode-normalization-
// alignments crate: a code point assigned later is, to it, a starter that
// neither decomposes nor composes. ICU's [:age=9.0:] holds the code points
// assigned in 9.0 or earlier; for those, NFC_QC and ccc are stable across
// Unicode versions, so ICU 72 (Unicode 15) answers for them.
void mark_nfc_safe(std::vector<uint8_t>& flags) {
  UErrorCode status = U_ZERO_ERROR;
  icu::UnicodeSet safe(icu::UnicodeString(u"[[:^age=9.0:][[:NFC_QC=Yes:]&[:ccc=0:]]]"), status);
  if (U_FAILURE(status)) fail("ICU: cannot build the NFC quick-check set: ", u_errorName(status));
  for (int32_t i = 0; i < safe.getRangeCount(); ++i)
    for (UChar32 cp = safe.getRangeStart(i); cp <= safe.getRangeEnd(i); ++cp) flags[cp] |= kNfcSafe;
}

}  // namespace

const CodePointTable& CodePointTable::get() {
  static const CodePointTable table;
  return table;
}

CodePointTable::CodePointTable() {
  std::vector<uint8_t> flat(kCodePoints, 0);
  mark(flat, kLetterRanges, kLetter);
  mark(flat, kNumberRanges, kNumber);
  mark(flat, kSpaceRanges, kSpace);
  mark_nfc_safe(flat);
  for (char32_t cp = 0; cp < 128; ++cp) ascii_[cp] = flat[cp];

  // Most 256-code-point blocks repeat (unassigned planes, CJK, Hangul): keep one copy of each.
  constexpr size_t kBlockSize = size_t(1) << kBlockBits;
  constexpr size_t kBlocks = kCodePoints >> kBlockBits;
  block_of_ = std::make_unique<uint16_t[]>(kBlocks);
  std::unordered_map<std::string_view, uint16_t> index_of_block;
  std::vector<std::string_view> distinct;
  for (size_t b = 0; b < kBlocks; ++b) {
    std::string_view content(reinterpret_cast<const char*>(flat.data() + b * kBlockSize), kBlockSize);
    auto [it, inserted] = index_of_block.emplace(content, static_cast<uint16_t>(distinct.size()));
    if (inserted) distinct.push_back(content);
    block_of_[b] = it->second;
  }
  blocks_ = std::make_unique<uint8_t[]>(distinct.size() * kBlockSize);
  for (size_t i = 0; i < distinct.size(); ++i)
    std::copy(distinct[i].begin(), distinct[i].end(), blocks_.get() + i * kBlockSize);
}

}  // namespace qinfer::unicode
