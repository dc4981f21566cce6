#include "models/chat_session.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"

namespace kiln::models {

absl::StatusOr<ChatSession> ChatSession::Create(const LlamaModel& model,
                                                const LoadedTokenizer& tokenizer,
                                                ChatOptions options) {
  if (tokenizer.chat_template == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("chat: ", tokenizer.no_template_reason.empty() ? "the model has no chat template"
                                                                    : tokenizer.no_template_reason));
  }
  if (absl::Status s = options.sampling.Validate(); !s.ok()) return s;
  if (options.max_reply_tokens < 1) {
    return absl::InvalidArgumentError(absl::StrCat("chat: the reply limit must be positive, got ",
                                                   options.max_reply_tokens));
  }
  absl::StatusOr<Session> session = Session::Create(model);
  if (!session.ok()) return session.status();
  session->set_replay_steps(options.replay_steps);
  return ChatSession(model, tokenizer, std::move(options), *std::move(session));
}

void ChatSession::Reset() {
  messages_ = nlohmann::ordered_json::array();
  if (!options_.system_prompt.empty()) {
    messages_.push_back({{"role", "system"}, {"content", options_.system_prompt}});
  }
  session_.Rewind(0);
}

absl::StatusOr<ChatTurn> ChatSession::Say(const std::string& user_message,
                                          const std::function<void(absl::string_view)>& on_text) {
  const auto start = std::chrono::steady_clock::now();
  nlohmann::ordered_json messages = messages_;
  messages.push_back({{"role", "user"}, {"content", user_message}});
  ChatRenderOptions render;
  render.add_generation_prompt = true;
  render.extra = options_.template_variables;
  absl::StatusOr<std::string> prompt = tokenizer_->chat_template->Render(messages, render);
  if (!prompt.ok()) return prompt.status();
  absl::StatusOr<std::vector<int32_t>> ids = tokenizer_->tokenizer->Encode(
      *prompt, {.add_special_tokens = false, .parse_special = true});
  if (!ids.ok()) return ids.status();
  if (static_cast<int>(ids->size()) >= session_.context()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chat: the conversation is ", ids->size(), " tokens, which no longer fits the context of ",
        session_.context(), " positions: /reset to start afresh, or run with a larger --context"));
  }
  // Reuse the cache for the tokens the new prompt shares with it; at least
  // one token is fed so that there are logits to sample from.
  const std::vector<int32_t>& held = session_.tokens();
  size_t shared = std::mismatch(held.begin(), held.end(), ids->begin(), ids->end()).first -
                  held.begin();
  shared = std::min(shared, ids->size() - 1);
  session_.Rewind(static_cast<int>(shared));
  ChatTurn turn;
  turn.prompt_tokens = static_cast<int>(ids->size() - shared);
  absl::StatusOr<int32_t> next = session_.FeedSampled(absl::MakeConstSpan(ids->data() + shared, ids->size() - shared),
                                                      tokenizer_->tokenizer->vocab_size(), sampler_);
  if (!next.ok()) return next.status();
  const int room = session_.context() - session_.size();
  absl::StatusOr<int> sampled = ContinueSession(
      session_, *next, *tokenizer_, sampler_, std::min(options_.max_reply_tokens, room),
      [&](absl::string_view piece) {
        turn.reply.append(piece.data(), piece.size());
        on_text(piece);
      });
  if (!sampled.ok()) return sampled.status();
  turn.reply_tokens = *sampled;
  messages.push_back({{"role", "assistant"}, {"content", turn.reply}});
  messages_ = std::move(messages);
  turn.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return turn;
}

}  // namespace kiln::models
