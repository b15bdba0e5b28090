// libFuzzer target: the input is text (valid UTF-8 or not) encoded with the
// real Qwen3 tokenizer, with and without special tokens, then decoded. An
// Error (invalid UTF-8) is expected; a crash, a sanitizer report or an id
// outside the vocabulary is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "text/tokenizer.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const qinfer::Tokenizer tok = qinfer::Tokenizer::from_file(std::string(QINFER_TEST_DATA) + "/tokenizer.json");
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (bool special : {true, false}) {
    try {
      const std::vector<int32_t> ids = tok.encode(text, special);
      for (int32_t id : ids)
        if (id < 0 || static_cast<size_t>(id) >= tok.vocab_size()) __builtin_trap();
      (void)tok.decode(ids, false);
      (void)tok.decode(ids, true);
    } catch (const qinfer::Error&) {
      // invalid UTF-8: a clear error with the byte offset
    }
  }
  return 0;
}
