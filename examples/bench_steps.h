// Timing helpers the GPU benchmarks share.
#ifndef KILN_EXAMPLES_BENCH_STEPS_H_
#define KILN_EXAMPLES_BENCH_STEPS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "models/llama.h"

namespace kiln::cli {

double Median(std::vector<double> v);

// Where a step's wall time went, in seconds: recording its trace (Forward),
// realizing it (the executor queues the kernels; where a kernel reports
// errors it also waits for them), and reading the logits back.
struct StepTimes {
  double trace = 0, realize = 0, read_back = 0;  // read_back: the logits, or the token
};

// One forward step of `n` tokens at `pos` (ids made up from the position),
// realized and its logits read back (with `greedy`: its greedy token,
// picked on the model's device, as a decode step does); seconds of wall
// time. Adds its parts to `times` when given.
absl::StatusOr<double> TimedStep(const models::LlamaModel& model, models::KvCache& cache,
                                 int64_t n, int64_t pos, StepTimes* times = nullptr, bool greedy = false);

}  // namespace kiln::cli

#endif  // KILN_EXAMPLES_BENCH_STEPS_H_
