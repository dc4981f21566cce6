// A conversation with a model: each turn renders the whole conversation
// through the chat template (as transformers' apply_chat_template), feeds
// the model only the tokens past what its KV cache already holds, and
// streams the reply. Templates that rewrite earlier turns (Qwen3 drops old
// thinking) just cost a longer feed from where the texts part.
#ifndef KILN_MODELS_CHAT_SESSION_H_
#define KILN_MODELS_CHAT_SESSION_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "models/generate.h"
#include "models/load_model.h"
#include "models/sampler.h"
#include "models/session.h"
#include "nlohmann/json.hpp"

namespace kiln::models {

struct ChatOptions {
  std::string system_prompt;  // empty: no system message
  Sampler::Options sampling;
  int max_reply_tokens = 1024;
  // Template variables such as {"enable_thinking": false}.
  nlohmann::ordered_json template_variables = nlohmann::ordered_json::object();
  // On a GPU, rerun a decode step recorded once (Session::set_replay_steps).
  bool replay_steps = true;
};

struct ChatTurn {
  std::string reply;
  int prompt_tokens = 0;  // fed this turn (not held in the cache already)
  int reply_tokens = 0;
  double seconds = 0;
};

class ChatSession {
 public:
  // FailedPrecondition (with the reason) when the tokenizer has no chat
  // template. `model` and `tokenizer` must outlive the session.
  static absl::StatusOr<ChatSession> Create(const LlamaModel& model,
                                            const LoadedTokenizer& tokenizer, ChatOptions options);

  // Adds the user's message, streams the reply to on_text and adds it to
  // the conversation. InvalidArgument when the conversation no longer fits
  // the context (Reset starts afresh); the failed message is not kept.
  absl::StatusOr<ChatTurn> Say(const std::string& user_message,
                               const std::function<void(absl::string_view)>& on_text);

  // Forgets the conversation (the system prompt stays).
  void Reset();

  const nlohmann::ordered_json& messages() const { return messages_; }

 private:
  ChatSession(const LlamaModel& model, const LoadedTokenizer& tokenizer, ChatOptions options,
              Session session)
      : tokenizer_(&tokenizer),
        options_(std::move(options)),
        session_(std::move(session)),
        sampler_(options_.sampling) {
    (void)model;
    Reset();
  }

  const LoadedTokenizer* tokenizer_;
  ChatOptions options_;
  Session session_;
  Sampler sampler_;
  nlohmann::ordered_json messages_;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_CHAT_SESSION_H_
