#include "models/chat/chat_template.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::models {
namespace {

using jinja::Value;

// A special token as tokenizer_config.json spells it: a string, an
// AddedToken object {"content": ...}, or null.
absl::StatusOr<std::optional<std::string>> TokenField(const nlohmann::json& config,
                                                      const std::string& path, const char* field) {
  const auto it = config.find(field);
  if (it == config.end() || it->is_null()) return std::optional<std::string>();
  if (it->is_string()) return std::optional<std::string>(it->get<std::string>());
  if (it->is_object()) {
    const auto content = it->find("content");
    if (content != it->end() && content->is_string()) {
      return std::optional<std::string>(content->get<std::string>());
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": \"", field, "\" is neither a string, an object with a \"content\" string, nor null"));
}

absl::StatusOr<std::string> TemplateField(const nlohmann::json& config, const std::string& path) {
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) {
    return absl::NotFoundError(absl::StrCat(path, ": no \"chat_template\" (the model has no chat template)"));
  }
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": \"chat_template\" is neither a string nor a list of named templates"));
  }
  std::vector<std::string> names;
  for (const nlohmann::json& entry : *it) {
    if (!entry.is_object()) continue;
    const auto name = entry.find("name");
    const auto tmpl = entry.find("template");
    if (name == entry.end() || !name->is_string()) continue;
    names.push_back(name->get<std::string>());
    if (names.back() == "default") {
      if (tmpl == entry.end() || !tmpl->is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": the \"default\" chat template has no \"template\" string"));
      }
      return tmpl->get<std::string>();
    }
  }
  return absl::NotFoundError(absl::StrCat(path, ": \"chat_template\" has no template named \"default\" (it has: ",
                                          absl::StrJoin(names, ", "), ")"));
}

template <typename Json>
absl::StatusOr<std::string> RenderWith(const jinja::Template& tmpl, const SpecialTokens& tokens,
                                       const Json& messages, const ChatRenderOptions& options) {
  if (!messages.is_array()) {
    return absl::InvalidArgumentError("chat template: messages must be a JSON array of message objects");
  }
  if (!options.extra.is_object()) {
    return absl::InvalidArgumentError("chat template: extra variables must be a JSON object");
  }
  jinja::Dict context;
  const std::pair<const char*, const std::optional<std::string>*> named[] = {
      {"bos_token", &tokens.bos_token},
      {"eos_token", &tokens.eos_token},
      {"unk_token", &tokens.unk_token},
      {"pad_token", &tokens.pad_token},
  };
  for (const auto& [name, token] : named) {
    if (token->has_value() && !(*token)->empty()) context.Set(Value::String(name), Value::String(**token));
  }
  if (!tokens.additional_special_tokens.empty()) {
    std::vector<Value> list;
    for (const std::string& t : tokens.additional_special_tokens) list.push_back(Value::String(t));
    context.Set(Value::String("additional_special_tokens"), Value::List(std::move(list)));
  }
  for (auto it = options.extra.begin(); it != options.extra.end(); ++it) {
    const std::string& key = it.key();
    if (key == "messages" || key == "tools" || key == "documents" || key == "add_generation_prompt") {
      return absl::InvalidArgumentError(
          absl::StrCat("chat template: \"", key, "\" cannot be an extra variable"));
    }
    absl::StatusOr<Value> v = jinja::FromJson(it.value());
    if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat("chat template: extra \"", key, "\": ", v.status().message()));
    context.Set(Value::String(key), *std::move(v));
  }
  absl::StatusOr<Value> msgs = jinja::FromJson(messages);
  if (!msgs.ok()) return absl::InvalidArgumentError(absl::StrCat("chat template: messages: ", msgs.status().message()));
  absl::StatusOr<Value> tools = jinja::FromJson(options.tools);
  if (!tools.ok()) return absl::InvalidArgumentError(absl::StrCat("chat template: tools: ", tools.status().message()));
  context.Set(Value::String("messages"), *std::move(msgs));
  context.Set(Value::String("tools"), *std::move(tools));
  context.Set(Value::String("documents"), Value::None());
  context.Set(Value::String("add_generation_prompt"), Value::Bool(options.add_generation_prompt));
  return tmpl.Render(Value::FromDict(std::move(context)), options.render);
}

}  // namespace

absl::StatusOr<ChatTemplate> ChatTemplate::Create(std::string source, SpecialTokens tokens) {
  absl::StatusOr<jinja::Template> tmpl = jinja::Template::Parse(source);
  if (!tmpl.ok()) return tmpl.status();
  return ChatTemplate(*std::move(tmpl), std::make_shared<const std::string>(std::move(source)),
                      std::make_shared<const SpecialTokens>(std::move(tokens)));
}

absl::StatusOr<ChatTemplate> ChatTemplate::FromTokenizerConfig(const nlohmann::json& config,
                                                               const std::string& path) {
  if (!config.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  absl::StatusOr<std::string> source = TemplateField(config, path);
  if (!source.ok()) return source.status();
  SpecialTokens tokens;
  const std::pair<const char*, std::optional<std::string>*> fields[] = {
      {"bos_token", &tokens.bos_token},
      {"eos_token", &tokens.eos_token},
      {"unk_token", &tokens.unk_token},
      {"pad_token", &tokens.pad_token},
  };
  for (const auto& [name, out] : fields) {
    absl::StatusOr<std::optional<std::string>> t = TokenField(config, path, name);
    if (!t.ok()) return t.status();
    *out = *std::move(t);
  }
  if (const auto extra = config.find("additional_special_tokens");
      extra != config.end() && !extra->is_null()) {
    if (!extra->is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": \"additional_special_tokens\" is not a list"));
    }
    for (const nlohmann::json& t : *extra) {
      if (t.is_string()) {
        tokens.additional_special_tokens.push_back(t.get<std::string>());
      } else if (t.is_object() && t.contains("content") && t["content"].is_string()) {
        tokens.additional_special_tokens.push_back(t["content"].get<std::string>());
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": an \"additional_special_tokens\" entry is not a token"));
      }
    }
  }
  absl::StatusOr<ChatTemplate> out = Create(*std::move(source), std::move(tokens));
  if (!out.ok()) {
    return absl::Status(out.status().code(), absl::StrCat(path, ": chat_template: ", out.status().message()));
  }
  return out;
}

absl::StatusOr<std::string> ChatTemplate::Render(const nlohmann::ordered_json& messages,
                                                 const ChatRenderOptions& options) const {
  return RenderWith(template_, *tokens_, messages, options);
}

absl::StatusOr<std::string> ChatTemplate::Render(const nlohmann::json& messages,
                                                 const ChatRenderOptions& options) const {
  return RenderWith(template_, *tokens_, messages, options);
}

}  // namespace kiln::models
