// A parsed Jinja template, rendered like jinja2 in transformers'
// environment (trim_blocks, lstrip_blocks, sandboxed, loop controls,
// raise_exception). Parse once, render many times; render is const and may
// run concurrently from several threads.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/budget.h"
#include "text/jinja/value.h"

namespace qinfer::jinja {

class Source;
struct Stmt;

class Template {
 public:
  // Throws Error naming `name`, the line and the column of a syntax error.
  explicit Template(const std::string& source, std::string name = "template");
  ~Template();
  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;

  // The template's variables, in addition to the builtin globals. Errors
  // while rendering name the template line and column; so does going over
  // `limits` (budget.h).
  std::string render(const std::vector<std::pair<std::string, Value>>& variables,
                     const RenderLimits& limits = {}) const;
  const std::string& text() const;  // the source it was compiled from

 private:
  std::unique_ptr<Source> source_;
  std::vector<std::unique_ptr<Stmt>> body_;
  std::vector<std::string> shadowed_;  // top-level names that start undefined (scopes.cpp)
};

}  // namespace qinfer::jinja
