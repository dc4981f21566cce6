// Picks the next token from a row of logits: greedy, temperature, or nucleus
// (top-p) sampling, reproducible for a seed on every platform.
#ifndef KILN_MODELS_SAMPLER_H_
#define KILN_MODELS_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace kiln::models {

class Sampler {
 public:
  struct Options {
    // 0 picks the argmax; otherwise logits are divided by it before the softmax
    // (below 1 sharpens, above 1 flattens). Must be finite and >= 0.
    float temperature = 1.0f;
    // Nucleus sampling when in (0, 1): only the fewest most-probable tokens whose
    // probabilities sum past top_p are candidates. <= 0 or >= 1 turns it off.
    float top_p = 1.0f;
    uint64_t seed = 0;

    // InvalidArgument for a negative or non-finite temperature or a NaN top_p.
    absl::Status Validate() const;
  };

  // Invalid options are reported by every Sample call.
  explicit Sampler(Options options);

  // A token id in [0, logits.size()). InvalidArgument for invalid options, empty
  // logits, a NaN or +inf logit, or logits that are all -inf.
  absl::StatusOr<int32_t> Sample(absl::Span<const float> logits);

  const Options& options() const { return options_; }

  // The next uniform double in [0, 1) from splitmix64: fixed arithmetic, so
  // a seed gives the same draws with every standard library. Sample draws
  // one per call at a temperature above 0; a draw made elsewhere
  // (DeviceSampledToken) takes its coin from here instead.
  double NextUniform();

 private:

  Options options_;
  absl::Status options_status_;
  uint64_t state_;
  // Reused between calls: sampling runs once per generated token.
  std::vector<double> probs_;
  std::vector<int32_t> order_;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_SAMPLER_H_
