// The text generation loop: prefill the prompt in one step, then decode one
// token per step, streaming text as it is produced. Follows llama2.c's run.c:
// `steps` counts forward passes (positions 0 .. steps-1, the prompt
// included), each of which yields the token of the next position; a stop
// token (EOS, end of turn; BOS too for llama2.c) ends the text.
#ifndef KILN_MODELS_GENERATE_H_
#define KILN_MODELS_GENERATE_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/llama.h"
#include "models/load_model.h"
#include "models/sampler.h"
#include "models/session.h"

namespace kiln::models {

struct GenerateOptions {
  std::string prompt;
  int steps = 256;  // positions in all; at most the model's context
  Sampler::Options sampling;
  // Tokenize the prompt with the tokenizer's own BOS and the like; off for a
  // prompt rendered from a chat template (which writes them itself).
  bool add_special_tokens = true;
  // Stream the prompt's text before the generated text (as run.c does).
  bool echo_prompt = true;
  // On a GPU, rerun a decode step recorded once (Session::set_replay_steps);
  // false records every step's trace. Either way the token is picked there
  // (Session::FeedSampled) and only its id is read back.
  bool replay_steps = true;
};

struct GenerateStats {
  int prompt_tokens = 0;     // BOS included
  int generated_tokens = 0;  // sampled after the prompt
  double prefill_seconds = 0;
  double decode_seconds = 0;
  // Of the decode time: recording traces, and realizing them.
  double decode_trace_seconds = 0;
  double decode_realize_seconds = 0;

  double prefill_tokens_per_second() const;
  double decode_tokens_per_second() const;
};

// Runs on the model's device (see LlamaModel::To). Calls on_text with each
// piece of text as soon as it is whole UTF-8. InvalidArgument when the
// prompt alone fills the context or steps is out of range.
absl::StatusOr<GenerateStats> Generate(const LlamaModel& model, const LoadedTokenizer& tokenizer,
                                       const GenerateOptions& options,
                                       const std::function<void(absl::string_view)>& on_text);

// Streams the text of `next` (the token drawn after what `session` holds)
// and of up to `max_tokens` - 1 more drawn by `sampler`, feeding each to the
// session, and stops after a stop token (fed to the session, not shown).
// Returns the number of tokens sampled.
absl::StatusOr<int> ContinueSession(Session& session, int32_t next, const LoadedTokenizer& tokenizer,
                                    Sampler& sampler, int max_tokens,
                                    const std::function<void(absl::string_view)>& on_text);

}  // namespace kiln::models

#endif  // KILN_MODELS_GENERATE_H_
