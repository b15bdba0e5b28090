#include "text/jinja/template.h"

#include "text/jinja/builtins.h"
#include "text/jinja/context.h"
#include "text/jinja/parser.h"

namespace qinfer::jinja {

Template::Template(const std::string& source, std::string name)
    : source_(std::make_unique<Source>(std::move(name), source)),
      body_(parse(*source_)),
      shadowed_(resolve_scopes(body_)) {}

Template::~Template() = default;
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;

const std::string& Template::text() const { return source_->text(); }

std::string Template::render(const std::vector<std::pair<std::string, Value>>& variables,
                             const RenderLimits& limits) const {
  RenderBudget budget(limits);
  auto globals = std::make_shared<Scope>();
  add_builtin_globals(*globals);
  auto variables_scope = std::make_shared<Scope>(globals);
  for (const auto& [name, value] : variables) variables_scope->set(name, value);
  // Top-level `set`s go to a scope of their own, where names the template
  // assigns before reading start undefined even if a variable has that name.
  auto scope = std::make_shared<Scope>(variables_scope);
  shadow(*scope, shadowed_);
  Context ctx{*source_, scope};
  std::string out;
  execute_body(body_, ctx, out);
  return out;
}

}  // namespace qinfer::jinja
