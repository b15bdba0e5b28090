// The -t flag of every command that computes.
#pragma once

namespace qinfer::cli {

// 0 means every hardware thread; a negative count is an Error. More threads
// than the hardware runs at once only make each parallel step wait for
// descheduled ones (and a huge count exhausts the process), so the count is
// capped there with a warning on stderr.
int thread_count(int requested);

}  // namespace qinfer::cli
