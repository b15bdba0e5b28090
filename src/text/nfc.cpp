#include "text/nfc.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/uniset.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "text/unicode_classes.h"
#include "util/error.h"
#include "util/utf8.h"

namespace qinfer {
namespace {

class Unicode9Nfc {
 public:
  static const Unicode9Nfc& get() {
    static const Unicode9Nfc instance;
    return instance;
  }
  // ICU orders the marks after a starter by insertion, so a run of n
  // combining marks out of order costs n^2 (400 KB of alternating U+0316
  // U+0301: 15 s). Such text is decomposed and put in canonical order here
  // (a stable sort per run, as the standard defines the order), and ICU then
  // composes marks that arrive in order. NFC(NFD(x)) is NFC(x).
  std::string normalize(std::string_view text, size_t long_run) const {
    return compose(longest_mark_run(text) > long_run ? decompose_in_order(text) : std::string(text));
  }

  // The longest run of code points whose decompositions begin with a mark
  // (U+0F73 has combining class 0 but decomposes into two marks): what ICU
  // reorders as one.
  size_t longest_mark_run(std::string_view text) const {
    size_t longest = 0, run = 0;
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    for (const auto* end = p + text.size(); p < end;) {
      int len;
      const char32_t cp = utf8::decode_valid(p, len);
      const bool leads_with_mark =
          cp >= 0x300 && u_getIntPropertyValue(static_cast<UChar32>(cp), UCHAR_LEAD_CANONICAL_COMBINING_CLASS) != 0 &&
          in_set(cp);  // no mark below U+0300
      run = leads_with_mark ? run + 1 : 0;
      longest = std::max(longest, run);
      p += len;
    }
    return longest;
  }

 private:
  bool is_mark(char32_t cp) const { return u_getCombiningClass(static_cast<UChar32>(cp)) != 0 && in_set(cp); }
  bool in_set(char32_t cp) const { return unicode9_->contains(static_cast<UChar32>(cp)); }

  // NFD as the filtered normalizer makes it: code points outside Unicode 9.0
  // are copied and end a run.
  std::string decompose_in_order(std::string_view text) const {
    std::vector<char32_t> cps;
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    for (const auto* end = p + text.size(); p < end;) {
      int len;
      const char32_t cp = utf8::decode_valid(p, len);
      p += len;
      icu::UnicodeString d;
      if (!in_set(cp) || !nfd_->getDecomposition(static_cast<UChar32>(cp), d)) {
        cps.push_back(cp);
        continue;
      }
      for (int32_t i = 0; i < d.length(); i = d.moveIndex32(i, 1)) cps.push_back(static_cast<char32_t>(d.char32At(i)));
    }
    auto ccc = [](char32_t cp) { return u_getCombiningClass(static_cast<UChar32>(cp)); };
    for (size_t i = 0; i < cps.size();) {
      size_t end = i;
      while (end < cps.size() && is_mark(cps[end])) ++end;
      std::stable_sort(cps.begin() + static_cast<std::ptrdiff_t>(i), cps.begin() + static_cast<std::ptrdiff_t>(end),
                       [&](char32_t a, char32_t b) { return ccc(a) < ccc(b); });
      i = end == i ? i + 1 : end;
    }
    std::string out;
    out.reserve(text.size());
    for (const char32_t cp : cps) utf8::append_code_point(out, cp);
    return out;
  }

  std::string compose(std::string_view text) const {
    std::string out;
    out.reserve(text.size());
    icu::StringByteSink<std::string> sink(&out);
    UErrorCode status = U_ZERO_ERROR;
    filtered_->normalizeUTF8(0, icu::StringPiece(text.data(), static_cast<int32_t>(text.size())), sink, nullptr,
                             status);
    if (U_FAILURE(status)) fail("ICU NFC failed: ", u_errorName(status));
    return out;
  }

  Unicode9Nfc() {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
    if (U_FAILURE(status)) fail("ICU: no NFC data: ", u_errorName(status));
    nfd_ = icu::Normalizer2::getNFDInstance(status);
    if (U_FAILURE(status)) fail("ICU: no NFD data: ", u_errorName(status));
    unicode9_ = std::make_unique<icu::UnicodeSet>(icu::UnicodeString(u"[:age=9.0:]"), status);
    if (U_FAILURE(status)) fail("ICU: cannot build the Unicode 9.0 set: ", u_errorName(status));
    unicode9_->freeze();
    filtered_ = std::make_unique<icu::FilteredNormalizer2>(*nfc, *unicode9_);
  }
  const icu::Normalizer2* nfd_ = nullptr;
  std::unique_ptr<icu::UnicodeSet> unicode9_;
  std::unique_ptr<icu::FilteredNormalizer2> filtered_;
};

}  // namespace

bool nfc_quick_yes(std::string_view text) {
  const auto& table = unicode::CodePointTable::get();
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    uint64_t word;
    if (end - p >= 8 && (std::memcpy(&word, p, 8), (word & 0x8080808080808080ull) == 0)) {
      p += 8;  // ASCII is NFC-safe
      continue;
    }
    int len;
    const char32_t cp = utf8::decode_valid(p, len);
    if (!(table.flags(cp) & unicode::kNfcSafe)) return false;
    p += len;
  }
  return true;
}

std::string nfc(std::string_view text, size_t long_run) { return Unicode9Nfc::get().normalize(text, long_run); }

size_t nfc_mark_run(std::string_view text) { return Unicode9Nfc::get().longest_mark_run(text); }

}  // namespace qinfer
