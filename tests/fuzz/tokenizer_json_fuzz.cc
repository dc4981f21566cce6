// HfTokenizer on arbitrary bytes, in two modes picked by the first byte:
//   0x00: the rest is text for the Llama 3 fixture (loaded once): encode it
//         both ways and check that decoding gives it back byte for byte;
//   else: the bytes are a tokenizer.json; where it loads, encode a few fixed
//         texts with it and decode the ids, and decode a range of ids.
// Set KILN_FUZZ_LLAMA3 to the fixture's path for the text mode (default: the
// shared fixtures beside the source tree).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "models/text/hf_tokenizer.h"
#include "models/text/unicode_chars.h"
#include "nlohmann/json.hpp"

namespace {

using kiln::models::EncodeOptions;
using kiln::models::HfTokenizer;

const HfTokenizer* Llama3() {
  static const HfTokenizer* const tokenizer = [] {
    const char* path = std::getenv("KILN_FUZZ_LLAMA3");
    auto loaded = HfTokenizer::Load(
        path != nullptr ? path : KILN_SHARED_DIR "/fixtures/tokenizers/llama3/tokenizer.json");
    if (!loaded.ok()) {
      std::fprintf(stderr, "cannot load the Llama 3 fixture: %s\n",
                   std::string(loaded.status().message()).c_str());
      std::abort();
    }
    return loaded->release();
  }();
  return tokenizer;
}

void FuzzText(const std::string& text) {
  const HfTokenizer& t = *Llama3();
  for (const bool parse_special : {true, false}) {
    auto ids = t.Encode(text, EncodeOptions{true, parse_special});
    if (!ids.ok()) {
      // Only invalid UTF-8 may be refused.
      if (kiln::models::IsValidUtf8(text)) std::abort();
      return;
    }
    auto back = t.DecodeBytes(*ids, /*skip_special_tokens=*/false);
    if (!back.ok() || *back != text) std::abort();  // byte-level BPE loses nothing
    (void)t.Decode(*ids, /*skip_special_tokens=*/true);
  }
}

void FuzzJson(const uint8_t* data, size_t size) {
  const nlohmann::json root = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return;
  auto loaded = HfTokenizer::FromJson(root, "fuzz.json");
  if (!loaded.ok()) return;
  const HfTokenizer& t = **loaded;
  static const char* const kTexts[] = {"Hello world",
                                       "",
                                       " a  b\n\n\tc ",
                                       "<s>x</s><|eot_id|>",
                                       "日本語 é e\xCC\x81 👍🏽",
                                       "1234567 3.14",
                                       "I'm don't THEY'LL",
                                       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
  for (const char* text : kTexts) {
    for (const bool add_special : {true, false}) {
      for (const bool parse_special : {true, false}) {
        auto ids = t.Encode(text, EncodeOptions{add_special, parse_special});
        if (!ids.ok()) continue;
        for (const int32_t id : *ids) {
          if (id < 0 || id >= t.vocab_size()) std::abort();  // Encode must stay in range
        }
        (void)t.Decode(*ids, false);
        (void)t.Decode(*ids, true);
      }
    }
  }
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < t.vocab_size() && id < 300; ++id) {
    ids.push_back(id);
    (void)t.TokenText(id);
    (void)t.IsSpecial(id);
  }
  (void)t.DecodeBytes(ids, false);
  (void)t.Decode(ids, true);
  (void)t.TokenId("a");
  (void)t.Describe();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 0 && data[0] == 0) {
    FuzzText(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  } else {
    FuzzJson(data, size);
  }
  return 0;
}
