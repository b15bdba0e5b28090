// A command's output of JSON lines (batch, embed), one value per line.
#pragma once
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace qinfer::test {

inline std::vector<nlohmann::json> json_lines_of(const std::string& out) {
  std::vector<nlohmann::json> v;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) v.push_back(nlohmann::json::parse(line));
  return v;
}

}  // namespace qinfer::test
