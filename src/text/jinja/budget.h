// One budget for a template render. A chat template comes with the model
// (from anywhere), so rendering it must end in bounded time and memory
// whatever it says. The limits are enforced where values are built, not
// filter by filter: every string and list the template builds, the output,
// and the number of evaluation steps (expressions evaluated plus statements
// run: loops and recursion spend them). Exceeding one is an EvalError, which
// the evaluator reports with the template's line and column. Real chat
// templates stay orders of magnitude below these defaults.
#pragma once
#include <cstddef>
#include <cstdint>

namespace qinfer::jinja {

struct RenderLimits {
  size_t max_output_bytes = size_t{64} << 20;
  size_t max_string_bytes = size_t{64} << 20;  // any one string built
  size_t max_list_items = size_t{1} << 22;     // any one list built
  uint64_t max_steps = 50'000'000;
};

// Installs `limits` for the renders of this thread while it lives, with its
// own step count. Outside any render the default limits hold (no steps).
class RenderBudget {
 public:
  explicit RenderBudget(const RenderLimits& limits = {});
  ~RenderBudget();
  RenderBudget(const RenderBudget&) = delete;
  RenderBudget& operator=(const RenderBudget&) = delete;

  // Each throws EvalError naming the limit when it is exceeded. Sizes are
  // doubles so that callers can pass products (width * count) without
  // overflow before the check.
  static void check_string(double bytes);
  static void check_list(double items);
  static void check_output(size_t bytes);
  static void step();

 private:
  RenderLimits limits_;
  uint64_t steps_ = 0;
  RenderBudget* outer_;
};

// One level of a walk over nested values (printing, tojson, ==, <, the
// namespace cycle check): an evaluation step, and a C++ stack frame, so
// walks stop with an EvalError at kMaxValueNesting levels.
class NestedValueLevel {
 public:
  static constexpr int kMaxValueNesting = 512;
  NestedValueLevel();
  ~NestedValueLevel();
  NestedValueLevel(const NestedValueLevel&) = delete;
  NestedValueLevel& operator=(const NestedValueLevel&) = delete;
};

}  // namespace qinfer::jinja
