// Timing helpers the GPU benchmarks share.
#ifndef KILN_EXAMPLES_BENCH_STEPS_H_
#define KILN_EXAMPLES_BENCH_STEPS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "models/llama.h"

namespace kiln::cli {

double Median(std::vector<double> v);

// One forward step of `n` tokens at `pos` (ids made up from the position),
// realized and its logits read back; seconds of wall time.
absl::StatusOr<double> TimedStep(const models::LlamaModel& model, models::KvCache& cache,
                                 int64_t n, int64_t pos);

}  // namespace kiln::cli

#endif  // KILN_EXAMPLES_BENCH_STEPS_H_
