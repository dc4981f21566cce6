// RoPE frequency schemes of real checkpoints. Plain RoPE turns pair i of a
// head by pos * theta^(-2i/d); the scaled schemes change those inverse
// frequencies (and YaRN also scales cos and sin), as transformers'
// ROPE_INIT_FUNCTIONS and llama.cpp's rope_freqs tensor do.
#ifndef KILN_MODELS_ROPE_SCALING_H_
#define KILN_MODELS_ROPE_SCALING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::models {

struct RopeScaling {
  enum class Type {
    kDefault,  // plain RoPE
    kLinear,   // every frequency divided by factor (position interpolation)
    kLlama3,   // Llama 3.1+: long wavelengths divided by factor, a smooth band between
    kYarn,     // YaRN: a ramp between interpolation and extrapolation, cos/sin scaled
    kFactors,  // per-pair divisors given as numbers (GGUF's rope_freqs tensor)
  };
  Type type = Type::kDefault;
  double factor = 1.0;
  // kLlama3 and kYarn: the context the model was trained with before scaling.
  int64_t original_max_position_embeddings = 0;
  // kLlama3.
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  // kYarn.
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  std::optional<double> attention_factor;  // default 0.1 ln(factor) + 1
  bool truncate = true;                    // round the correction range to whole pairs
  // kFactors: inv_freq[i] /= factors[i], one per pair.
  std::vector<double> factors;

  // "llama3 (factor 32, low 1, high 4, original context 8192)" and the like.
  std::string ToString() const;
};

// The inverse frequency of each of a head's head_dim / 2 pairs and the
// factor cos and sin are multiplied by. InvalidArgument naming the field for
// parameters the scheme cannot use (a factor below 1, a factor count that
// does not match the pairs, ...).
struct RopeFrequencies {
  std::vector<double> inv_freq;
  double attention_scale = 1.0;
};
absl::StatusOr<RopeFrequencies> ComputeRopeFrequencies(double theta, int64_t head_dim,
                                                       const RopeScaling& scaling);

}  // namespace kiln::models

#endif  // KILN_MODELS_ROPE_SCALING_H_
