// Tests of ChatTemplate on the fixture tokenizers' real templates, against
// transformers' reference renders (tests/models/references/
// chat_templates.json) and against literal renders made with jinja2 3.1.6
// set up as transformers' apply_chat_template.
#include "models/chat/chat_template.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace kiln::models {
namespace {

using ::testing::HasSubstr;
using ordered_json = nlohmann::ordered_json;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string FixtureConfigPath(const std::string& name) {
  return std::string(KILN_SHARED_DIR) + "/fixtures/tokenizers/" + name + "/tokenizer_config.json";
}

absl::StatusOr<ChatTemplate> FixtureTemplate(const std::string& name) {
  const std::string path = FixtureConfigPath(name);
  const nlohmann::json config = nlohmann::json::parse(ReadFile(path), nullptr, false);
  if (config.is_discarded()) return absl::NotFoundError("cannot read " + path);
  return ChatTemplate::FromTokenizerConfig(config, path);
}

absl::StatusOr<ChatTemplate> Inline(const std::string& source) {
  SpecialTokens tokens;
  tokens.bos_token = "<s>";
  tokens.eos_token = "</s>";
  return ChatTemplate::Create(source, tokens);
}

ordered_json Json(const std::string& text) { return ordered_json::parse(text, nullptr, false); }

struct LiteralCase {
  const char* template_name;
  const char* messages;
  const char* tools;
  bool add_generation_prompt;
  const char* extra;
  const char* name;
  const char* output;
};

// Rendered by jinja2 3.1.6 with transformers' environment and context
// (the conversations of tests/models/references/make_references.py).
const LiteralCase kLiteralCases[] = {
    {R"j(llama3)j", R"j([{"role": "user", "content": "Hello!"}])j", R"j(null)j", true, R"j({})j", R"j(llama3/one_user/gen=True/extra={}/tools=False)j",
     R"j(<|begin_of_text|><|start_header_id|>user<|end_header_id|>

Hello!<|eot_id|><|start_header_id|>assistant<|end_header_id|>

)j"},
    {R"j(llama3)j", R"j([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "  Hi there  \n"}])j", R"j(null)j", true, R"j({})j", R"j(llama3/system_user/gen=True/extra={}/tools=False)j",
     R"j(<|begin_of_text|><|start_header_id|>system<|end_header_id|>

You are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>

Hi there<|eot_id|><|start_header_id|>assistant<|end_header_id|>

)j"},
    {R"j(llama3)j", R"j([{"role": "system", "content": "Be kind."}, {"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4."}, {"role": "user", "content": "And 3+3?"}])j", R"j(null)j", false, R"j({})j", R"j(llama3/multi_turn/gen=False/extra={}/tools=False)j",
     R"j(<|begin_of_text|><|start_header_id|>system<|end_header_id|>

Be kind.<|eot_id|><|start_header_id|>user<|end_header_id|>

What is 2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>

4.<|eot_id|><|start_header_id|>user<|end_header_id|>

And 3+3?<|eot_id|><|start_header_id|>assistant<|end_header_id|>

)j"},
    {R"j(llama3)j", R"j([{"role": "user", "content": "日本語で答えて 👍🏽 \"quotes\" and \\ backslash"}])j", R"j(null)j", true, R"j({})j", R"j(llama3/unicode/gen=True/extra={}/tools=False)j",
     R"j(<|begin_of_text|><|start_header_id|>user<|end_header_id|>

日本語で答えて 👍🏽 "quotes" and \ backslash<|eot_id|><|start_header_id|>assistant<|end_header_id|>

)j"},
    {R"j(qwen3)j", R"j([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "  Hi there  \n"}])j", R"j(null)j", true, R"j({})j", R"j(qwen3/system_user/gen=True/extra={}/tools=False)j",
     R"j(<|im_start|>system
You are terse.<|im_end|>
<|im_start|>user
  Hi there  
<|im_end|>
<|im_start|>assistant
)j"},
    {R"j(qwen3)j", R"j([{"role": "system", "content": "Be kind."}, {"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4."}, {"role": "user", "content": "And 3+3?"}])j", R"j(null)j", false, R"j({})j", R"j(qwen3/multi_turn/gen=False/extra={}/tools=False)j",
     R"j(<|im_start|>system
Be kind.<|im_end|>
<|im_start|>user
What is 2+2?<|im_end|>
<|im_start|>assistant
4.<|im_end|>
<|im_start|>user
And 3+3?<|im_end|>
)j"},
    {R"j(qwen3)j", R"j([{"role": "user", "content": "日本語で答えて 👍🏽 \"quotes\" and \\ backslash"}])j", R"j(null)j", true, R"j({"enable_thinking": false})j", R"j(qwen3/unicode/gen=True/extra={"enable_thinking": false}/tools=False)j",
     R"j(<|im_start|>user
日本語で答えて 👍🏽 "quotes" and \ backslash<|im_end|>
<|im_start|>assistant
<think>

</think>

)j"},
    {R"j(qwen3)j", R"j([{"role": "user", "content": "Why is the sky blue?"}, {"role": "assistant", "content": "<think>\nRayleigh scattering.\n</think>\n\nBecause of scattering."}, {"role": "user", "content": "And sunsets?"}])j", R"j(null)j", true, R"j({})j", R"j(qwen3/thinking_history/gen=True/extra={}/tools=False)j",
     R"j(<|im_start|>user
Why is the sky blue?<|im_end|>
<|im_start|>assistant
Because of scattering.<|im_end|>
<|im_start|>user
And sunsets?<|im_end|>
<|im_start|>assistant
)j"},
    {R"j(qwen3)j", R"j([{"role": "user", "content": "Why is the sky blue?"}, {"role": "assistant", "content": "<think>\nRayleigh scattering.\n</think>\n\nBecause of scattering."}, {"role": "user", "content": "And sunsets?"}])j", R"j(null)j", false, R"j({})j", R"j(qwen3/thinking_history/gen=False/extra={}/tools=False)j",
     R"j(<|im_start|>user
Why is the sky blue?<|im_end|>
<|im_start|>assistant
Because of scattering.<|im_end|>
<|im_start|>user
And sunsets?<|im_end|>
)j"},
    {R"j(qwen3)j", R"j([{"role": "user", "content": "Q1"}, {"role": "assistant", "content": "A1", "reasoning_content": "thought one"}, {"role": "user", "content": "Q2"}, {"role": "assistant", "content": "A2", "reasoning_content": "thought two"}])j", R"j(null)j", false, R"j({})j", R"j(qwen3/reasoning_field/gen=False/extra={}/tools=False)j",
     R"j(<|im_start|>user
Q1<|im_end|>
<|im_start|>assistant
A1<|im_end|>
<|im_start|>user
Q2<|im_end|>
<|im_start|>assistant
<think>
thought two
</think>

A2<|im_end|>
)j"},
    {R"j(qwen3)j", R"j([{"role": "system", "content": "You can call tools."}, {"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}}]}, {"role": "tool", "content": "{\"temp\": 21}"}, {"role": "tool", "content": "{\"sky\": \"clear\"}"}, {"role": "user", "content": "Thanks"}])j", R"j([{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}])j", true, R"j({})j", R"j(qwen3/tool_calls/gen=True/extra={}/tools=True)j",
     R"j(<|im_start|>system
You can call tools.

# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
<|im_start|>user
Weather in Paris?<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}
</tool_call><|im_end|>
<|im_start|>user
<tool_response>
{"temp": 21}
</tool_response>
<tool_response>
{"sky": "clear"}
</tool_response><|im_end|>
<|im_start|>user
Thanks<|im_end|>
<|im_start|>assistant
)j"},
    {R"j(qwen3)j", R"j([{"role": "system", "content": "You can call tools."}, {"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}}]}, {"role": "tool", "content": "{\"temp\": 21}"}, {"role": "tool", "content": "{\"sky\": \"clear\"}"}, {"role": "user", "content": "Thanks"}])j", R"j(null)j", false, R"j({"enable_thinking": false})j", R"j(qwen3/tool_calls/gen=False/extra={"enable_thinking": false}/tools=False)j",
     R"j(<|im_start|>system
You can call tools.<|im_end|>
<|im_start|>user
Weather in Paris?<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}
</tool_call><|im_end|>
<|im_start|>user
<tool_response>
{"temp": 21}
</tool_response>
<tool_response>
{"sky": "clear"}
</tool_response><|im_end|>
<|im_start|>user
Thanks<|im_end|>
)j"},
    {R"j(qwen3)j", R"j([{"role": "user", "content": "Hello!"}])j", R"j([{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}])j", true, R"j({})j", R"j(qwen3/one_user/gen=True/extra={}/tools=True)j",
     R"j(<|im_start|>system
# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
<|im_start|>user
Hello!<|im_end|>
<|im_start|>assistant
)j"},
};

TEST(ChatTemplate, RendersFixtureTemplatesAsJinja2Does) {
  for (const LiteralCase& c : kLiteralCases) {
    absl::StatusOr<ChatTemplate> tmpl = FixtureTemplate(c.template_name);
    ASSERT_TRUE(tmpl.ok()) << tmpl.status();
    ChatRenderOptions options;
    options.add_generation_prompt = c.add_generation_prompt;
    options.tools = Json(c.tools);
    options.extra = Json(c.extra);
    absl::StatusOr<std::string> out = tmpl->Render(Json(c.messages), options);
    ASSERT_TRUE(out.ok()) << c.name << ": " << out.status();
    EXPECT_EQ(*out, c.output) << c.name;
  }
}

TEST(ChatTemplate, MatchesTransformersReferences) {
  const std::string path = std::string(KILN_SOURCE_DIR) + "/tests/models/references/chat_templates.json";
  const std::string text = ReadFile(path);
  if (text.empty()) GTEST_SKIP() << path << " is not there yet (tests/models/references/make_references.py)";
  const ordered_json refs = ordered_json::parse(text, nullptr, false);
  ASSERT_FALSE(refs.is_discarded()) << path;
  ASSERT_TRUE(refs.contains("cases") && refs["cases"].is_array()) << path;
  int checked = 0;
  for (const ordered_json& c : refs["cases"]) {
    const std::string name = c.value("name", "?");
    const std::string which = c.value("template", "");
    absl::StatusOr<ChatTemplate> tmpl = absl::UnknownError("no template");
    if (which == "inline") {
      SpecialTokens tokens;
      const ordered_json& st = c["special_tokens"];
      if (st.contains("bos_token") && st["bos_token"].is_string()) tokens.bos_token = st["bos_token"];
      if (st.contains("eos_token") && st["eos_token"].is_string()) tokens.eos_token = st["eos_token"];
      tmpl = ChatTemplate::Create(c["source"].get<std::string>(), tokens);
    } else {
      tmpl = FixtureTemplate(which);
    }
    ASSERT_TRUE(tmpl.ok()) << name << ": " << tmpl.status();
    ChatRenderOptions options;
    options.add_generation_prompt = c.value("add_generation_prompt", false);
    options.tools = c.contains("tools") ? c["tools"] : ordered_json(nullptr);
    options.extra = c.contains("extra") ? c["extra"] : ordered_json::object();
    absl::StatusOr<std::string> out = tmpl->Render(c["messages"], options);
    if (c.contains("error")) {
      ASSERT_FALSE(out.ok()) << name;
      EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition) << name;
      EXPECT_EQ(out.status().message(), c["error"].get<std::string>()) << name;
    } else {
      ASSERT_TRUE(out.ok()) << name << ": " << out.status();
      EXPECT_EQ(*out, c["output"].get<std::string>()) << name;
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(ChatTemplate, ReadsTokenizerConfig) {
  absl::StatusOr<ChatTemplate> qwen = FixtureTemplate("qwen3");
  ASSERT_TRUE(qwen.ok()) << qwen.status();
  EXPECT_FALSE(qwen->special_tokens().bos_token.has_value());  // null in the config
  EXPECT_EQ(qwen->special_tokens().eos_token, "<|im_end|>");
  EXPECT_EQ(qwen->special_tokens().pad_token, "<|endoftext|>");
  EXPECT_EQ(qwen->special_tokens().additional_special_tokens.size(), 13u);
  absl::StatusOr<ChatTemplate> llama = FixtureTemplate("llama3");
  ASSERT_TRUE(llama.ok()) << llama.status();
  EXPECT_EQ(llama->special_tokens().bos_token, "<|begin_of_text|>");
  EXPECT_THAT(llama->source(), HasSubstr("<|start_header_id|>"));
}

TEST(ChatTemplate, TokenizerConfigVariants) {
  const nlohmann::json config = nlohmann::json::parse(R"({
    "chat_template": [{"name": "tool_use", "template": "tools"},
                      {"name": "default", "template": "{{ bos_token }}{{ eos_token }}|{{ pad_token is defined }}"}],
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
    "eos_token": "</s>", "pad_token": null})");
  absl::StatusOr<ChatTemplate> tmpl = ChatTemplate::FromTokenizerConfig(config, "cfg.json");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  EXPECT_EQ(*tmpl->Render(ordered_json::array(), ChatRenderOptions()), "<s></s>|False");
}

TEST(ChatTemplate, TokenizerConfigErrors) {
  const auto from = [](const char* text) {
    return ChatTemplate::FromTokenizerConfig(nlohmann::json::parse(text), "dir/tokenizer_config.json")
        .status();
  };
  EXPECT_EQ(from(R"({"bos_token": "<s>"})"),
            absl::NotFoundError(
                "dir/tokenizer_config.json: no \"chat_template\" (the model has no chat template)"));
  EXPECT_EQ(from(R"({"chat_template": null})").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(from(R"({"chat_template": [{"name": "rag", "template": "x"}]})"),
            absl::NotFoundError("dir/tokenizer_config.json: \"chat_template\" has no template named "
                                "\"default\" (it has: rag)"));
  EXPECT_EQ(from(R"({"chat_template": 5})").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(from(R"({"chat_template": "x", "eos_token": 3})"),
            absl::InvalidArgumentError("dir/tokenizer_config.json: \"eos_token\" is neither a string, "
                                       "an object with a \"content\" string, nor null"));
  EXPECT_EQ(from(R"({"chat_template": "x", "additional_special_tokens": "a"})").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(from(R"({"chat_template": "{% if %}"})"),
            absl::InvalidArgumentError("dir/tokenizer_config.json: chat_template: jinja: line 1, column "
                                       "7: Expected an expression, got 'end of statement block'"));
  EXPECT_EQ(ChatTemplate::FromTokenizerConfig(nlohmann::json::array(), "p").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ChatTemplate, RenderErrors) {
  absl::StatusOr<ChatTemplate> tmpl = Inline("{{ messages|length }}");
  ASSERT_TRUE(tmpl.ok());
  EXPECT_EQ(tmpl->Render(ordered_json::object(), ChatRenderOptions()).status().code(),
            absl::StatusCode::kInvalidArgument);
  ChatRenderOptions reserved;
  reserved.extra = Json(R"({"messages": []})");
  EXPECT_EQ(tmpl->Render(ordered_json::array(), reserved).status(),
            absl::InvalidArgumentError("chat template: \"messages\" cannot be an extra variable"));
  ChatRenderOptions not_object;
  not_object.extra = Json("[1]");
  EXPECT_EQ(tmpl->Render(ordered_json::array(), not_object).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<ChatTemplate> raising =
      Inline("{% if messages[0].role != 'user' %}{{ raise_exception('first must be user') }}{% endif %}");
  ASSERT_TRUE(raising.ok());
  EXPECT_EQ(raising->Render(Json(R"([{"role": "assistant"}])"), ChatRenderOptions()).status(),
            absl::FailedPreconditionError("first must be user"));
}

TEST(ChatTemplate, ContextMatchesTransformers) {
  absl::StatusOr<ChatTemplate> tmpl = Inline(
      "{{ tools is none }} {{ documents is none }} {{ add_generation_prompt }} {{ bos_token }} "
      "{{ unk_token is defined }} {{ enable_thinking }} {{ messages[0].content[0].text }}");
  ASSERT_TRUE(tmpl.ok());
  ChatRenderOptions options;
  options.add_generation_prompt = true;
  options.extra = Json(R"({"enable_thinking": false})");
  EXPECT_EQ(*tmpl->Render(Json(R"([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])"), options),
            "True True True <s> False False hi");
  // Extra variables override special tokens, as template_kwargs does.
  options.extra = Json(R"({"bos_token": "[B]"})");
  absl::StatusOr<ChatTemplate> bos = Inline("{{ bos_token }}");
  ASSERT_TRUE(bos.ok());
  EXPECT_EQ(*bos->Render(ordered_json::array(), options), "[B]");
}

TEST(ChatTemplate, ToolArgumentsKeepTheCallersKeyOrder) {
  absl::StatusOr<ChatTemplate> tmpl = Inline("{{ messages[0].arguments|tojson }}");
  ASSERT_TRUE(tmpl.ok());
  EXPECT_EQ(*tmpl->Render(Json(R"([{"arguments": {"z": 1, "a": 2}}])"), ChatRenderOptions()),
            R"({"z": 1, "a": 2})");
  // With nlohmann::json the keys arrive sorted: the caller chose that type.
  EXPECT_EQ(*tmpl->Render(nlohmann::json::parse(R"([{"arguments": {"z": 1, "a": 2}}])"),
                          ChatRenderOptions()),
            R"({"a": 2, "z": 1})");
}

TEST(ChatTemplate, StrftimeNowReadsTheGivenClock) {
  absl::StatusOr<ChatTemplate> tmpl = Inline("{{ strftime_now('%d %b %Y') }}");
  ASSERT_TRUE(tmpl.ok());
  ChatRenderOptions options;
  options.render.time_zone = absl::UTCTimeZone();
  options.render.now = [] { return absl::FromCivil(absl::CivilSecond(2025, 1, 26, 10, 0, 0), absl::UTCTimeZone()); };
  EXPECT_EQ(*tmpl->Render(ordered_json::array(), options), "26 Jan 2025");
}

}  // namespace
}  // namespace kiln::models
