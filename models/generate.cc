#include "models/generate.h"

#include <chrono>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/ops.h"

namespace kiln::models {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// llama2.c's safe printing: a piece that is a single raw byte is shown only
// if it is printable or whitespace (a lone continuation byte is not text).
bool Printable(absl::string_view piece) {
  if (piece.size() != 1) return !piece.empty();
  const unsigned char c = static_cast<unsigned char>(piece[0]);
  return (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t' || c == '\r' || c == ' ';
}

// Runs one step and returns the logits row of its last position.
absl::StatusOr<std::vector<float>> Step(const LlamaModel& model, KvCache& cache,
                                        const std::vector<int32_t>& tokens, int64_t start,
                                        double* trace_seconds, double* realize_seconds) {
  const Clock::time_point t0 = Clock::now();
  const int64_t n = static_cast<int64_t>(tokens.size());
  const Symbol pos = model.PositionSymbol(n);
  const Tensor logits = model.Forward(Tensor::FromHost<int32_t>(tokens, {n}), Dim(pos), cache);
  std::vector<Tensor> outputs = {logits};
  outputs.insert(outputs.end(), cache.k.begin(), cache.k.end());
  outputs.insert(outputs.end(), cache.v.begin(), cache.v.end());
  const Clock::time_point t1 = Clock::now();
  if (absl::Status s = RealizeAll(outputs, {{pos, start}}); !s.ok()) return s;
  absl::StatusOr<std::vector<float>> row = logits.to_host<float>();
  *trace_seconds += std::chrono::duration<double>(t1 - t0).count();
  *realize_seconds += SecondsSince(t1);
  return row;
}

}  // namespace

double GenerateStats::prefill_tokens_per_second() const {
  return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0;
}

double GenerateStats::decode_tokens_per_second() const {
  return decode_seconds > 0 ? generated_tokens / decode_seconds : 0;
}

absl::StatusOr<GenerateStats> Generate(const LlamaModel& model, const Tokenizer& tokenizer,
                                       const GenerateOptions& options,
                                       const std::function<void(absl::string_view)>& on_text) {
  const int context = model.config().max_seq_len;
  if (options.steps < 1 || options.steps > context) {
    return absl::InvalidArgumentError(absl::StrCat("generate: steps must be in [1, ", context,
                                                   "] (the model's context), got ",
                                                   options.steps));
  }
  if (tokenizer.vocab_size() != model.config().vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "generate: the tokenizer has ", tokenizer.vocab_size(), " tokens, the model ",
        model.config().vocab_size));
  }
  absl::StatusOr<std::vector<int32_t>> prompt =
      tokenizer.Encode(options.prompt, /*bos=*/true, /*eos=*/false);
  if (!prompt.ok()) return prompt.status();
  const int n = static_cast<int>(prompt->size());
  if (n > context) {
    return absl::InvalidArgumentError(absl::StrCat(
        "generate: the prompt is ", n, " tokens (BOS included), longer than the model's "
        "context of ", context, " positions"));
  }
  Sampler sampler(options.sampling);
  if (absl::Status s = options.sampling.Validate(); !s.ok()) return s;
  absl::StatusOr<KvCache> cache = model.NewCache(model.device());
  if (!cache.ok()) return cache.status();

  GenerateStats stats;
  stats.prompt_tokens = n;
  const auto emit = [&](int32_t prev, int32_t token) -> absl::Status {
    absl::StatusOr<std::string> piece = tokenizer.Decode(prev, token);
    if (!piece.ok()) return piece.status();
    if (Printable(*piece)) on_text(*piece);
    return absl::OkStatus();
  };
  // Positions 1 .. n-1 hold the prompt; like run.c, every forward pass at
  // position p prints the token of position p + 1, up to position `steps`.
  for (int i = 1; i < n && i <= options.steps; ++i) {
    if (absl::Status s = emit((*prompt)[i - 1], (*prompt)[i]); !s.ok()) return s;
  }
  if (n > options.steps) return stats;

  // Prefill: the forward passes of positions 0 .. n-1 in one step.
  double unused_trace = 0, unused_realize = 0;
  Clock::time_point start = Clock::now();
  absl::StatusOr<std::vector<float>> logits =
      Step(model, *cache, *prompt, 0, &unused_trace, &unused_realize);
  if (!logits.ok()) return logits.status();
  absl::StatusOr<int32_t> next = sampler.Sample(*logits);
  if (!next.ok()) return next.status();
  stats.prefill_seconds = SecondsSince(start);

  // Decode: one forward pass per position n .. steps-1.
  start = Clock::now();
  int32_t token = prompt->back();
  for (int pos = n;; ++pos) {
    if (*next == Tokenizer::kBos || *next == Tokenizer::kEos) break;
    if (absl::Status s = emit(token, *next); !s.ok()) return s;
    ++stats.generated_tokens;
    token = *next;
    if (pos == options.steps) break;
    logits = Step(model, *cache, {token}, pos, &stats.decode_trace_seconds,
                  &stats.decode_realize_seconds);
    if (!logits.ok()) return logits.status();
    next = sampler.Sample(*logits);
    if (!next.ok()) return next.status();
  }
  stats.decode_seconds = SecondsSince(start);
  return stats;
}

}  // namespace kiln::models
