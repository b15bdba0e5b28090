// The hand-written Qwen2 pre-tokenizer against Oniguruma running the regex
// itself (the engine HF tokenizers uses). Debian's libonig 6.9.8 has Unicode
// 14.0 tables while HF's bundled Oniguruma has 16.0, so code points whose
// class differs between the two are checked here against ICU (Unicode 15.0)
// where it knows them, and against HF itself in hf_differential_test.cpp.
#include <gtest/gtest.h>
#include <unicode/uchar.h>

#include <iostream>
#include <optional>
#include <random>

#include "code_points.h"
#include "oniguruma_regex.h"
#include "text/pretokenizer.h"
#include "text/unicode_classes.h"

using namespace qinfer;

namespace {

const test::OnigurumaRegex& qwen2_regex() {
  static const test::OnigurumaRegex re(kQwen2PreTokenizerRegex);
  return re;
}

std::vector<size_t> our_piece_ends(std::string_view text) {
  std::vector<size_t> ends;
  size_t pos = 0;
  for_each_qwen2_piece(text, [&](std::string_view piece) { ends.push_back(pos += piece.size()); });
  return ends;
}

std::vector<std::string> pieces(std::string_view text) {
  std::vector<std::string> out;
  for_each_qwen2_piece(text, [&](std::string_view piece) { out.emplace_back(piece); });
  return out;
}

using test::is_surrogate;
using test::utf8_of;

uint8_t our_classes(char32_t cp) {
  return unicode::CodePointTable::get().flags(cp) & (unicode::kLetter | unicode::kNumber | unicode::kSpace);
}

// ICU 72 (Unicode 15.0): the same bits, and the version a code point was assigned in.
uint8_t icu_classes(char32_t cp) {
  uint8_t f = 0;
  if (U_GET_GC_MASK(cp) & U_GC_L_MASK) f |= unicode::kLetter;
  if (U_GET_GC_MASK(cp) & U_GC_N_MASK) f |= unicode::kNumber;
  if (u_isUWhiteSpace(cp)) f |= unicode::kSpace;
  return f;
}
int icu_age_major(char32_t cp) {
  UVersionInfo age;
  u_charAge(cp, age);
  return age[0];  // 0: unassigned in Unicode 15.0
}

// Code points on which Debian's Oniguruma agrees with our (HF's) classes.
bool oniguruma_agrees(char32_t cp) { return test::oniguruma_classes(cp) == our_classes(cp); }

}  // namespace

TEST(Qwen2PreTokenizer, ClassTablesAgreeWithOnigurumaAndIcu) {
  size_t agree = 0, newer_checked_by_icu = 0, newer_than_icu = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (is_surrogate(cp)) continue;
    if (oniguruma_agrees(cp)) {
      ++agree;
      continue;
    }
    // Debian's Oniguruma is Unicode 14: any difference must be a newer code point.
    const int age = icu_age_major(cp);
    ASSERT_TRUE(age == 0 || age >= 15) << "U+" << std::hex << uint32_t(cp) << " (Unicode " << std::dec << age
                                       << ") differs from Oniguruma";
    if (age >= 15) {
      ASSERT_EQ(our_classes(cp), icu_classes(cp)) << "U+" << std::hex << uint32_t(cp) << " differs from ICU";
      ++newer_checked_by_icu;
    } else {
      ++newer_than_icu;
    }
  }
  std::cout << "classes: " << agree << " code points as Oniguruma (Unicode 14), " << newer_checked_by_icu
            << " newer ones as ICU (Unicode 15.0), " << newer_than_icu
            << " from Unicode 15.1/16.0 checked against HF only\n";
  EXPECT_GT(newer_than_icu, 0u);  // e.g. CJK Extension I (15.1) is \p{L} for HF
}

TEST(Qwen2PreTokenizer, Examples) {
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces("a   b"), (V{"a", "  ", " b"}));
  EXPECT_EQ(pieces("hello   "), (V{"hello", "   "}));
  EXPECT_EQ(pieces("end.\n\nNext"), (V{"end", ".\n\n", "Next"}));
  EXPECT_EQ(pieces("2024"), (V{"2", "0", "2", "4"}));
  EXPECT_EQ(pieces("it's IT'S we'LL 'sa"), (V{"it", "'s", " IT", "'S", " we", "'LL", " '", "sa"}));
  EXPECT_EQ(pieces("\tfoo \n\n  x"), (V{"\tfoo", " \n\n", " ", " x"}));
  EXPECT_EQ(pieces("a \xEF\xBB\xBF"
                   "b"),
            (V{"a", " \xEF\xBB\xBF", "b"}));  // U+FEFF is not \s
  EXPECT_EQ(pieces("a\xC2\x85"
                   "b"),
            (V{"a",
               "\xC2\x85"
               "b"}));  // U+0085 is
}

// Random strings over an alphabet of the regex's edge cases, compared split by split.
TEST(Qwen2PreTokenizer, SameSplitsAsOnigurumaOnRandomText) {
  const std::vector<std::string> atoms = {"a",
                                          "Z",
                                          "é",
                                          "ß",
                                          "日",
                                          "한",
                                          "ж",
                                          "ا",
                                          "1",
                                          "٣",
                                          "Ⅻ",
                                          "½",
                                          "0",
                                          " ",
                                          "  ",
                                          "\t",
                                          "\n",
                                          "\r",
                                          "\r\n",
                                          "\v",
                                          "\f",
                                          "\xC2\x85",
                                          "\xC2\xA0",
                                          "\xE3\x80\x80",
                                          "\xE2\x80\xA8",
                                          "\xEF\xBB\xBF",
                                          "'",
                                          "'s",
                                          "'S",
                                          "'t",
                                          "'re",
                                          "'VE",
                                          "'m",
                                          "'ll",
                                          "'D",
                                          "'Ll",
                                          "'ſ",
                                          "'K",
                                          "ﬆ",
                                          "!",
                                          ".",
                                          ",",
                                          "-",
                                          "_",
                                          "\"",
                                          "(",
                                          "😀",
                                          "👍🏽",
                                          "\xCC\x81",
                                          "\xE1\xAB\x81",
                                          "\xE2\x80\x8B",
                                          "\xC2\xAD",
                                          "\x01",
                                          "\x7F",
                                          "$",
                                          "€",
                                          "¥"};
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<size_t> pick(0, atoms.size() - 1), length(1, 24);
  std::uniform_int_distribution<uint32_t> any_cp(0, 0x10FFFF), coin(0, 9);
  size_t checked = 0;
  for (int n = 0; n < 20000; ++n) {
    std::string text;
    for (size_t k = length(rng); k > 0; --k) {
      if (coin(rng) == 0) {  // now and then any code point Debian's Oniguruma classifies as we do
        const char32_t cp = any_cp(rng);
        if (!is_surrogate(cp) && oniguruma_agrees(cp)) text += utf8_of(cp);
      } else {
        text += atoms[pick(rng)];
      }
    }
    ASSERT_EQ(our_piece_ends(text), qwen2_regex().piece_ends(text)) << "text: " << text;
    ++checked;
  }
  EXPECT_EQ(checked, 20000u);
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d) under Oniguruma's Unicode case folding: every
// code point of the first two planes in each letter position.
TEST(Qwen2PreTokenizer, ContractionCaseFoldingAsOniguruma) {
  for (char32_t cp = 1; cp < 0x20000; ++cp) {
    if (is_surrogate(cp) || !oniguruma_agrees(cp)) continue;
    const std::string c = utf8_of(cp);
    for (const std::string& text : {"'" + c, "'" + c + "e", "'" + c + "l", "'r" + c, "'v" + c, "'l" + c}) {
      const auto m = qwen2_regex().search(text, 0);
      ASSERT_TRUE(m && m->first == 0);
      ASSERT_EQ(qwen2_piece_end(text, 0), m->second) << "U+" << std::hex << uint32_t(cp);
    }
  }
}
