// The process's peak resident set, measured from a chosen point (bench,
// bench-batch).
#pragma once

namespace qinfer {

// Starts a new peak-RSS measurement (Linux: writing 5 to clear_refs resets
// the high-water mark), so what was resident before only counts if it stays.
void reset_peak_rss();

// VmHWM: the peak resident set in MiB since the last reset_peak_rss().
double peak_rss_mib();

}  // namespace qinfer
