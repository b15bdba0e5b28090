// The NFC normalizer of Hugging Face tokenizers, quirks included: HF composes
// with the Unicode 9.0 tables of the `unicode-normalization-alignments` crate,
// so a mark assigned later (U+1AC1, U+0C3C, ...) is a plain starter to it and
// neither reorders nor composes. ICU's NFC restricted to [:age=9.0:]
// (FilteredNormalizer2: code points outside the set are copied and split the
// text) reproduces exactly that.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace qinfer {

// True when `text` (valid UTF-8) holds only code points that NFC leaves alone
// whatever follows them, so nfc(text) == text without calling ICU.
bool nfc_quick_yes(std::string_view text);

// `text` (valid UTF-8) in HF's NFC. Text with a run of more than `long_run`
// combining marks is put in canonical order before ICU composes it (ICU
// orders a run in quadratic time); the result is the same either way.
std::string nfc(std::string_view text, size_t long_run = 32);

// The longest run in `text` (valid UTF-8) of code points whose decompositions
// begin with a combining mark: what ICU reorders as one, and what nfc()
// compares with `long_run`.
size_t nfc_mark_run(std::string_view text);

}  // namespace qinfer
