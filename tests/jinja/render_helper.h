// Renders a template string with variables given as a JSON object.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/template.h"

namespace qinfer::jinja::testing {

inline std::string render(const std::string& source,
                          const nlohmann::ordered_json& variables = nlohmann::ordered_json::object()) {
  Template t(source, "t");
  std::vector<std::pair<std::string, Value>> vars;
  for (const auto& [name, value] : variables.items()) vars.emplace_back(name, from_json(value));
  return t.render(vars);
}

}  // namespace qinfer::jinja::testing
