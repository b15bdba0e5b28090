// Picks a tile's compile-time row count from a run-time one: tiles are
// templates on their number of rows (their accumulators must be registers),
// the rows left at the end of a matrix are known only at run time.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <type_traits>
#include <utility>

namespace qinfer::kernels {

// Calls f(std::integral_constant<size_t, rows>{}); 1 <= rows <= Max.
template <size_t Max, class F>
inline void with_rows(size_t rows, const F& f) {
  const bool called = [&]<size_t... I>(std::index_sequence<I...>) {
    return ((rows == I + 1 && (f(std::integral_constant<size_t, I + 1>{}), true)) || ...);
  }
  (std::make_index_sequence<Max>{});
  if (!called) std::abort();  // a tile size the caller did not bound by Max
}

}  // namespace qinfer::kernels
