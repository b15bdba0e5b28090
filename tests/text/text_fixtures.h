// Shared by the tokenizer tests: the Qwen3 tokenizer (loaded once) and the
// JSON Lines fixtures of tests/data/tokenizer/.
#pragma once
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.h"
#include "text/tokenizer.h"

namespace qinfer::test {

inline const Tokenizer& qwen3_tokenizer() {
  static const Tokenizer tok = Tokenizer::from_file(data_path("tokenizer.json"));
  return tok;
}

inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) records.push_back(nlohmann::json::parse(line));
  return records;
}

inline std::string ids_to_string(const std::vector<int32_t>& ids) { return nlohmann::json(ids).dump(); }

}  // namespace qinfer::test
