#include "embedded_tokenizer.h"

// The assembler's .incbin copies each file into .rodata at build time (no
// code generator, no size limit as with a char array literal). ELF targets;
// QINFER_TOKENIZER_DIR is set for this file only by CMakeLists.txt, which also
// makes it recompile when the files change.
#define QINFER_EMBED(symbol, file)               \
  asm(".section .rodata\n"                       \
      ".balign 16\n"                             \
      ".global " #symbol "\n" #symbol            \
      ":\n"                                      \
      ".incbin \"" QINFER_TOKENIZER_DIR "/" file \
      "\"\n"                                     \
      ".global " #symbol "_end\n" #symbol        \
      "_end:\n"                                  \
      ".previous\n");                            \
  extern "C" const char symbol[], symbol##_end[];

QINFER_EMBED(qinfer_tokenizer_json, "tokenizer.json")
QINFER_EMBED(qinfer_tokenizer_config_json, "tokenizer_config.json")

namespace qinfer::cli {

std::string_view embedded_tokenizer_json() {
  return {qinfer_tokenizer_json, static_cast<size_t>(qinfer_tokenizer_json_end - qinfer_tokenizer_json)};
}

std::string_view embedded_tokenizer_config_json() {
  return {qinfer_tokenizer_config_json,
          static_cast<size_t>(qinfer_tokenizer_config_json_end - qinfer_tokenizer_config_json)};
}

}  // namespace qinfer::cli
