// `kiln generate`: text generation from a checkpoint; with --chat, one turn
// of the model's chat template.
#include <cstdio>

#include "absl/flags/flag.h"
#include "examples/commands.h"
#include "examples/flags.h"
#include "examples/run_setup.h"
#include "models/chat_session.h"
#include "models/generate.h"

namespace kiln::cli {
namespace {

void Print(absl::string_view piece) {
  std::fwrite(piece.data(), 1, piece.size(), stdout);
  std::fflush(stdout);
}

int RunChatTurn(LoadedRun& run) {
  models::ChatOptions options;
  options.system_prompt = absl::GetFlag(FLAGS_system);
  options.sampling = SamplingFromFlags();
  options.max_reply_tokens = absl::GetFlag(FLAGS_max_tokens);
  options.replay_steps = absl::GetFlag(FLAGS_replay_steps);
  absl::StatusOr<models::ChatSession> chat =
      models::ChatSession::Create(*run.model, run.tokenizer, options);
  if (!chat.ok()) {
    std::fprintf(stderr, "kiln generate: %s\n", chat.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<models::ChatTurn> turn = chat->Say(absl::GetFlag(FLAGS_prompt), Print);
  if (!turn.ok()) {
    std::fprintf(stderr, "\nkiln generate: %s\n", turn.status().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "\nchat: %d prompt tokens, %d reply tokens, %.2f s (%s)\n",
               turn->prompt_tokens, turn->reply_tokens, turn->seconds,
               run.device.ToString().c_str());
  return 0;
}

}  // namespace

int RunGenerate(const std::vector<std::string>& args) {
  int code = 0;
  std::optional<LoadedRun> run = LoadRun("kiln generate", &code);
  if (!run) return code;
  if (absl::GetFlag(FLAGS_chat)) return RunChatTurn(*run);

  models::GenerateOptions options;
  options.prompt = absl::GetFlag(FLAGS_prompt);
  options.steps = absl::GetFlag(FLAGS_steps);
  options.replay_steps = absl::GetFlag(FLAGS_replay_steps);
  options.sampling = SamplingFromFlags();
  if (options.steps > run->model->config().max_seq_len) {
    std::fprintf(stderr, "kiln generate: --steps %d exceeds the model's context; using %d\n",
                 options.steps, run->model->config().max_seq_len);
    options.steps = run->model->config().max_seq_len;
  }
  absl::StatusOr<models::GenerateStats> stats =
      models::Generate(*run->model, run->tokenizer, options, Print);
  if (!stats.ok()) {
    std::fprintf(stderr, "\nkiln generate: %s\n", stats.status().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr,
               "\nprefill: %d tokens, %.1f tokens/s; decode: %d tokens, %.1f tokens/s (%s)\n",
               stats->prompt_tokens, stats->prefill_tokens_per_second(),
               stats->generated_tokens, stats->decode_tokens_per_second(),
               run->device.ToString().c_str());
  return 0;
}

}  // namespace kiln::cli
