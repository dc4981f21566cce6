// Command-line flags shared by the subcommands, and the device choice.
#ifndef KILN_EXAMPLES_FLAGS_H_
#define KILN_EXAMPLES_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "tensor/device.h"

ABSL_DECLARE_FLAG(std::string, model);
ABSL_DECLARE_FLAG(std::string, tokenizer);
ABSL_DECLARE_FLAG(std::string, dtype);
ABSL_DECLARE_FLAG(int, context);
ABSL_DECLARE_FLAG(std::string, quantize);
ABSL_DECLARE_FLAG(bool, chat);
ABSL_DECLARE_FLAG(std::string, system);
ABSL_DECLARE_FLAG(int, max_tokens);
ABSL_DECLARE_FLAG(std::string, prompt);
ABSL_DECLARE_FLAG(int, steps);
ABSL_DECLARE_FLAG(double, temperature);
ABSL_DECLARE_FLAG(double, top_p);
ABSL_DECLARE_FLAG(int64_t, seed);
ABSL_DECLARE_FLAG(bool, pipelined_products);
ABSL_DECLARE_FLAG(int64_t, decode_columns);
ABSL_DECLARE_FLAG(std::string, device);
ABSL_DECLARE_FLAG(int, repeat);
ABSL_DECLARE_FLAG(bool, superoptimize);
ABSL_DECLARE_FLAG(bool, search_log);
ABSL_DECLARE_FLAG(bool, cuda_graphs);
ABSL_DECLARE_FLAG(bool, replay_steps);

namespace kiln::cli {

// The --device flag, falling back to the CPU (with one message on stderr)
// when the requested device has no executor in this process.
Device ChooseDevice();

// --decode_columns, clamped to 1..8 (with a message on stderr when it was not).
int64_t DecodeColumns();

}  // namespace kiln::cli

#endif  // KILN_EXAMPLES_FLAGS_H_
