#include "text/jinja/budget.h"

#include "text/jinja/value.h"

namespace qinfer::jinja {

namespace {

thread_local RenderBudget* current = nullptr;
thread_local int value_nesting = 0;
const RenderLimits kDefaults;

}  // namespace

RenderBudget::RenderBudget(const RenderLimits& limits) : limits_(limits), outer_(current) { current = this; }
RenderBudget::~RenderBudget() { current = outer_; }

void RenderBudget::check_string(double bytes) {
  const size_t limit = current ? current->limits_.max_string_bytes : kDefaults.max_string_bytes;
  if (bytes > static_cast<double>(limit))
    eval_fail("the template builds a string of ", static_cast<uint64_t>(bytes), " bytes, over the render limit of ",
              limit);
}

void RenderBudget::check_list(double items) {
  const size_t limit = current ? current->limits_.max_list_items : kDefaults.max_list_items;
  if (items > static_cast<double>(limit))
    eval_fail("the template builds a list of ", static_cast<uint64_t>(items), " items, over the render limit of ",
              limit);
}

void RenderBudget::check_output(size_t bytes) {
  const size_t limit = current ? current->limits_.max_output_bytes : kDefaults.max_output_bytes;
  if (bytes > limit) eval_fail("the template's output exceeds the render limit of ", limit, " bytes");
}

void RenderBudget::step() {
  if (current && ++current->steps_ > current->limits_.max_steps)
    eval_fail("the template runs more than ", current->limits_.max_steps,
              " evaluation steps (the render limit; a loop that does not end?)");
}

NestedValueLevel::NestedValueLevel() {
  if (value_nesting >= kMaxValueNesting)
    eval_fail("the template's values nested deeper than ", kMaxValueNesting, " levels");
  RenderBudget::step();
  ++value_nesting;
}

NestedValueLevel::~NestedValueLevel() { --value_nesting; }

}  // namespace qinfer::jinja
