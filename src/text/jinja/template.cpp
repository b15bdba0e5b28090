#include "text/jinja/template.h"

#include "text/jinja/builtins.h"
#include "text/jinja/context.h"
#include "text/jinja/parser.h"

namespace qinfer::jinja {

Template::Template(const std::string& source, std::string name)
    : source_(std::make_unique<Source>(std::move(name), source)), body_(parse(*source_)) {}

Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

std::string Template::render(const std::vector<std::pair<std::string, Value>>& variables) const {
  auto globals = std::make_shared<Scope>();
  add_builtin_globals(*globals);
  auto scope = std::make_shared<Scope>(globals);
  for (const auto& [name, value] : variables) scope->set(name, value);
  Context ctx{*source_, scope};
  std::string out;
  execute_body(body_, ctx, out);
  return out;
}

}  // namespace qinfer::jinja
