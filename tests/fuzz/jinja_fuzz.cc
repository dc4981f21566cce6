// Fuzz target for the Jinja engine: the input is a template; when it parses
// it is rendered against a small chat context with tight limits, so every
// input must finish quickly, in little memory, with a value or an error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "models/chat/jinja.h"
#include "models/chat/jinja_value.h"
#include "nlohmann/json.hpp"

namespace {

using kiln::models::jinja::Value;

const Value& Context() {
  static const Value* const context = [] {
    const auto json = nlohmann::ordered_json::parse(R"({
      "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi <b>there</b> 日本"},
        {"role": "assistant", "content": "<think>\nhm\n</think>\n\nHello",
         "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1, "b": [true, null, 2.5]}}}]},
        {"role": "tool", "content": "{\"ok\": true}"},
        {"role": "user", "content": [{"type": "text", "text": "parts"}, {"type": "image"}]}
      ],
      "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
      "documents": null, "add_generation_prompt": true, "enable_thinking": false,
      "bos_token": "<s>", "eos_token": "</s>"
    })");
    return new Value(*kiln::models::jinja::FromJson(json));
  }();
  return *context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<kiln::models::jinja::Template> tmpl = kiln::models::jinja::Template::Parse(source);
  if (!tmpl.ok()) return 0;
  kiln::models::jinja::RenderOptions options;
  options.now = [] { return absl::FromUnixSeconds(1720188189); };
  options.time_zone = absl::UTCTimeZone();
  options.max_output_bytes = 1 << 16;
  options.max_loop_iterations = 10000;
  options.max_work = 200000;
  options.max_call_depth = 20;
  options.max_range = 1000;
  absl::StatusOr<std::string> out = tmpl->Render(Context(), options);
  (void)out;
  return 0;
}
