// GPT-2's byte-level alphabet: each byte stands for one printable character,
// so any byte string becomes a string of vocabulary characters and back.
#ifndef KILN_MODELS_TEXT_BYTE_LEVEL_H_
#define KILN_MODELS_TEXT_BYTE_LEVEL_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace kiln::models {

// The split pattern of tokenizers' ByteLevel pre-tokenizer (use_regex).
inline constexpr absl::string_view kGpt2SplitPattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// The character standing for `byte`: the byte itself for the printable
// Latin-1 bytes, U+0100 upwards in order for the others.
uint32_t ByteLevelChar(uint8_t byte);

// The byte a character stands for, or -1 for a character outside the table.
int ByteOfByteLevelChar(int32_t cp);

// Appends every byte of `bytes` as its character (UTF-8).
void AppendByteLevel(absl::string_view bytes, std::string* out);

// The bytes a token's characters stand for; false (and `out` untouched) when
// some character is outside the table or the token is not valid UTF-8.
bool DecodeByteLevel(absl::string_view token, std::string* out);

}  // namespace kiln::models

#endif  // KILN_MODELS_TEXT_BYTE_LEVEL_H_
