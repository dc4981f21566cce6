// A model's chat template (tokenizer_config.json's "chat_template", or a
// GGUF's tokenizer.chat_template), rendered exactly as transformers'
// tokenizer.apply_chat_template(messages, tokenize=False, ...) does: the
// variables are messages, tools, documents (None), add_generation_prompt,
// the tokenizer's special tokens that are set, and any extra variables
// (enable_thinking, ...). See models/chat/jinja.h for the engine and its
// error codes.
#ifndef KILN_MODELS_CHAT_CHAT_TEMPLATE_H_
#define KILN_MODELS_CHAT_CHAT_TEMPLATE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "models/chat/jinja.h"
#include "nlohmann/json.hpp"

namespace kiln::models {

// The special tokens a template sees as bos_token, eos_token, ... A token
// that is not set is not defined in the template (transformers passes only
// the tokens that are set).
struct SpecialTokens {
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<std::string> unk_token;
  std::optional<std::string> pad_token;
  std::vector<std::string> additional_special_tokens;
};

struct ChatRenderOptions {
  bool add_generation_prompt = false;
  // The tools' JSON schemas; null means none (the template sees None).
  nlohmann::ordered_json tools = nullptr;
  // More template variables, e.g. {"enable_thinking": false}. They override
  // special tokens of the same name; messages, tools, documents and
  // add_generation_prompt cannot be given here.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  // The clock for strftime_now() and the engine's limits.
  jinja::RenderOptions render;
};

class ChatTemplate {
 public:
  // InvalidArgument for a template that does not parse (the message names
  // line and column), Unimplemented for jinja2 features kiln lacks.
  static absl::StatusOr<ChatTemplate> Create(std::string source, SpecialTokens tokens);

  // From a parsed tokenizer_config.json (`path` names it in messages):
  // "chat_template" is a string, or a list of {"name", "template"} objects
  // of which the one named "default" is used. Special tokens are strings,
  // {"content": ...} objects or null. NotFound when there is no template.
  static absl::StatusOr<ChatTemplate> FromTokenizerConfig(const nlohmann::json& config,
                                                          const std::string& path);

  // `messages` is the JSON array of message objects ({"role", "content",
  // ...}; content may be a list of parts; every field passes through). Key
  // order matters to `tojson`: nlohmann::json sorts object keys, so pass an
  // ordered_json to keep the caller's order, as Python does. Errors: those of
  // jinja.h; raise_exception(msg) is FailedPrecondition with msg verbatim.
  absl::StatusOr<std::string> Render(const nlohmann::ordered_json& messages,
                                     const ChatRenderOptions& options) const;
  absl::StatusOr<std::string> Render(const nlohmann::json& messages,
                                     const ChatRenderOptions& options) const;

  const std::string& source() const { return *source_; }
  const SpecialTokens& special_tokens() const { return *tokens_; }

 private:
  ChatTemplate(jinja::Template tmpl, std::shared_ptr<const std::string> source,
               std::shared_ptr<const SpecialTokens> tokens)
      : template_(std::move(tmpl)), source_(std::move(source)), tokens_(std::move(tokens)) {}

  jinja::Template template_;
  std::shared_ptr<const std::string> source_;
  std::shared_ptr<const SpecialTokens> tokens_;
};

}  // namespace kiln::models

#endif  // KILN_MODELS_CHAT_CHAT_TEMPLATE_H_
