#include "models/generate.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "models/text/stream_decoder.h"

namespace kiln::models {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool IsStop(const LoadedTokenizer& t, int32_t id) {
  return std::find(t.stop_ids.begin(), t.stop_ids.end(), id) != t.stop_ids.end();
}

}  // namespace

double GenerateStats::prefill_tokens_per_second() const {
  return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0;
}

double GenerateStats::decode_tokens_per_second() const {
  return decode_seconds > 0 ? generated_tokens / decode_seconds : 0;
}

absl::StatusOr<GenerateStats> Generate(const LlamaModel& model, const LoadedTokenizer& loaded,
                                       const GenerateOptions& options,
                                       const std::function<void(absl::string_view)>& on_text) {
  const Tokenizer& tokenizer = *loaded.tokenizer;
  const int context = model.config().max_seq_len;
  if (options.steps < 1 || options.steps > context) {
    return absl::InvalidArgumentError(absl::StrCat("generate: steps must be in [1, ", context,
                                                   "] (the model's context), got ",
                                                   options.steps));
  }
  if (tokenizer.vocab_size() > model.config().vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "generate: the tokenizer has ", tokenizer.vocab_size(), " tokens, the model ",
        model.config().vocab_size));
  }
  absl::StatusOr<std::vector<int32_t>> prompt = tokenizer.Encode(
      options.prompt, {.add_special_tokens = options.add_special_tokens, .parse_special = true});
  if (!prompt.ok()) return prompt.status();
  const int n = static_cast<int>(prompt->size());
  if (n == 0) {
    return absl::InvalidArgumentError(
        "generate: the prompt is empty and the tokenizer adds no BOS: give a --prompt");
  }
  if (n > context) {
    return absl::InvalidArgumentError(absl::StrCat(
        "generate: the prompt is ", n, " tokens (BOS included), longer than the model's "
        "context of ", context, " positions"));
  }
  if (absl::Status s = options.sampling.Validate(); !s.ok()) return s;
  Sampler sampler(options.sampling);
  absl::StatusOr<Session> session = Session::Create(model);
  if (!session.ok()) return session.status();
  session->set_replay_steps(options.replay_steps);

  GenerateStats stats;
  stats.prompt_tokens = n;
  StreamDecoder stream(tokenizer, /*skip_special_tokens=*/true);
  const auto emit = [&](int32_t token) -> absl::Status {
    absl::StatusOr<std::string> piece = stream.Push(token);
    if (!piece.ok()) return piece.status();
    if (!piece->empty()) on_text(*piece);
    return absl::OkStatus();
  };
  // Like run.c, the pass at position p shows the token of position p + 1, up
  // to position `steps`: the prompt's first token (BOS) is never shown.
  if (options.echo_prompt) {
    stream.Reset({prompt->front()});
    for (int i = 1; i < n && i <= options.steps; ++i) {
      if (absl::Status s = emit((*prompt)[i]); !s.ok()) return s;
    }
  } else {
    stream.Reset({prompt->back()});
  }
  if (n > options.steps) {
    if (const std::string rest = stream.Finish(); !rest.empty()) on_text(rest);
    return stats;
  }

  // On a GPU the token is picked there (greedy or sampled) and only its id
  // comes back; on the CPU the sampler draws from the logits.
  const int64_t vocab = tokenizer.vocab_size();
  const auto feed = [&](absl::Span<const int32_t> tokens) { return session->FeedSampled(tokens, vocab, sampler); };
  Clock::time_point start = Clock::now();
  absl::StatusOr<int32_t> next = feed(*prompt);
  if (!next.ok()) return next.status();
  stats.prefill_seconds = SecondsSince(start);

  // Decode: one forward pass per position n .. steps-1.
  start = Clock::now();
  const double trace0 = session->trace_seconds(), realize0 = session->realize_seconds();
  for (int pos = n;; ++pos) {
    if (IsStop(loaded, *next)) break;
    if (absl::Status s = emit(*next); !s.ok()) return s;
    ++stats.generated_tokens;
    if (pos == options.steps) break;
    next = feed({*next});
    if (!next.ok()) return next.status();
  }
  if (const std::string rest = stream.Finish(); !rest.empty()) on_text(rest);
  stats.decode_seconds = SecondsSince(start);
  stats.decode_trace_seconds = session->trace_seconds() - trace0;
  stats.decode_realize_seconds = session->realize_seconds() - realize0;
  return stats;
}

absl::StatusOr<int> ContinueSession(Session& session, int32_t next, const LoadedTokenizer& loaded,
                                    Sampler& sampler, int max_tokens,
                                    const std::function<void(absl::string_view)>& on_text) {
  const Tokenizer& tokenizer = *loaded.tokenizer;
  StreamDecoder stream(tokenizer, /*skip_special_tokens=*/true);
  stream.Reset(session.tokens().empty()
                   ? std::vector<int32_t>()
                   : std::vector<int32_t>(session.tokens().end() - 1, session.tokens().end()));
  int sampled = 0;
  while (sampled < max_tokens && session.size() < session.context()) {
    ++sampled;
    const bool stop = IsStop(loaded, next);
    if (!stop) {
      absl::StatusOr<std::string> piece = stream.Push(next);
      if (!piece.ok()) return piece.status();
      if (!piece->empty()) on_text(*piece);
    }
    // The stop token joins the conversation as the template would write it.
    absl::StatusOr<int32_t> after = session.FeedSampled({next}, tokenizer.vocab_size(), sampler);
    if (!after.ok()) return after.status();
    next = *after;
    if (stop) break;
  }
  if (const std::string rest = stream.Finish(); !rest.empty()) on_text(rest);
  return sampled;
}

}  // namespace kiln::models
