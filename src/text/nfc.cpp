#include "text/nfc.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uniset.h>

#include <cstring>
#include <memory>

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
  std::string normalize(std::string_view text) const {
    std::string out;
    out.reserve(text.size());
    icu::StringByteSink<std::string> sink(&out);
    UErrorCode status = U_ZERO_ERROR;
    filtered_->normalizeUTF8(0, icu::StringPiece(text.data(), static_cast<int32_t>(text.size())), sink, nullptr,
                             status);
    if (U_FAILURE(status)) fail("ICU NFC failed: ", u_errorName(status));
    return out;
  }

 private:
  Unicode9Nfc() {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
    if (U_FAILURE(status)) fail("ICU: no NFC data: ", u_errorName(status));
    unicode9_ = std::make_unique<icu::UnicodeSet>(icu::UnicodeString(u"[:age=9.0:]"), status);
    if (U_FAILURE(status)) fail("ICU: cannot build the Unicode 9.0 set: ", u_errorName(status));
    unicode9_->freeze();
    filtered_ = std::make_unique<icu::FilteredNormalizer2>(*nfc, *unicode9_);
  }
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

std::string nfc(std::string_view text) { return Unicode9Nfc::get().normalize(text); }

}  // namespace qinfer
