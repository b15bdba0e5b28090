// The Qwen3 tokenizer files, compiled into the binary: make-test-model writes
// them next to its random weights, and an installed qinfer must not need the
// source tree they come from.
#pragma once
#include <string_view>

namespace qinfer::cli {

std::string_view embedded_tokenizer_json();
std::string_view embedded_tokenizer_config_json();

}  // namespace qinfer::cli
