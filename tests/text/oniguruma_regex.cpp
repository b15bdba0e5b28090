#include "oniguruma_regex.h"

#include <oniguruma.h>

#include <stdexcept>

#include "text/unicode_classes.h"

namespace qinfer::test {

struct OnigurumaRegex::Impl {
  OnigRegex regex = nullptr;
  OnigRegion* region = nullptr;
};

OnigurumaRegex::OnigurumaRegex(std::string_view pattern) : impl_(new Impl) {
  OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
  onig_initialize(encodings, 1);
  OnigErrorInfo info;
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
  if (onig_new(&impl_->regex, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT,
               &info) != ONIG_NORMAL) {
    delete impl_;
    throw std::runtime_error("onig_new failed");
  }
  impl_->region = onig_region_new();
}

OnigurumaRegex::~OnigurumaRegex() {
  onig_region_free(impl_->region, 1);
  onig_free(impl_->regex);
  delete impl_;
}

std::optional<std::pair<size_t, size_t>> OnigurumaRegex::search(std::string_view text, size_t from) const {
  const auto* s = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = s + text.size();
  if (onig_search(impl_->regex, s, end, s + from, end, impl_->region, ONIG_OPTION_NONE) < 0) return std::nullopt;
  return std::make_pair(size_t(impl_->region->beg[0]), size_t(impl_->region->end[0]));
}

std::vector<size_t> OnigurumaRegex::piece_ends(std::string_view text) const {
  std::vector<size_t> ends;
  size_t pos = 0;
  while (pos < text.size()) {
    const auto m = search(text, pos);
    if (!m) break;
    if (m->first > pos) ends.push_back(m->first);
    ends.push_back(m->second);
    pos = m->second;
  }
  if (pos < text.size()) ends.push_back(text.size());
  return ends;
}

namespace {
unsigned property_ctype(const char* name) {
  auto* p = reinterpret_cast<OnigUChar*>(const_cast<char*>(name));
  return ONIGENC_PROPERTY_NAME_TO_CTYPE(ONIG_ENCODING_UTF8, p, p + std::char_traits<char>::length(name));
}
}  // namespace

uint8_t oniguruma_classes(char32_t cp) {
  static const unsigned letter = property_ctype("L"), number = property_ctype("N");
  uint8_t f = 0;
  if (ONIGENC_IS_CODE_CTYPE(ONIG_ENCODING_UTF8, cp, letter)) f |= unicode::kLetter;
  if (ONIGENC_IS_CODE_CTYPE(ONIG_ENCODING_UTF8, cp, number)) f |= unicode::kNumber;
  if (ONIGENC_IS_CODE_CTYPE(ONIG_ENCODING_UTF8, cp, ONIGENC_CTYPE_SPACE)) f |= unicode::kSpace;
  return f;
}

}  // namespace qinfer::test
