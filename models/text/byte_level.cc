#include "models/text/byte_level.h"

#include <array>

#include "models/text/unicode_chars.h"
#include "models/text/utf8.h"

namespace kiln::models {
namespace {

bool PrintsAsItself(int byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
}

struct Tables {
  std::array<uint32_t, 256> char_of_byte{};
  std::array<std::string, 256> utf8_of_byte;
  std::array<int16_t, 256 + 68> byte_of_char;  // 68 bytes do not print as themselves
  Tables() {
    byte_of_char.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      char_of_byte[b] = PrintsAsItself(b) ? static_cast<uint32_t>(b) : next++;
      AppendUtf8(char_of_byte[b], &utf8_of_byte[b]);
      byte_of_char[char_of_byte[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& GetTables() {
  static const Tables* const tables = new Tables();
  return *tables;
}

}  // namespace

uint32_t ByteLevelChar(uint8_t byte) { return GetTables().char_of_byte[byte]; }

int ByteOfByteLevelChar(int32_t cp) {
  const auto& table = GetTables().byte_of_char;
  if (cp < 0 || static_cast<size_t>(cp) >= table.size()) return -1;
  return table[cp];
}

void AppendByteLevel(absl::string_view bytes, std::string* out) {
  const Tables& t = GetTables();
  for (const char c : bytes) out->append(t.utf8_of_byte[static_cast<uint8_t>(c)]);
}

bool DecodeByteLevel(absl::string_view token, std::string* out) {
  const size_t start = out->size();
  size_t i = 0;
  while (i < token.size()) {
    size_t length = 1;
    const int byte = ByteOfByteLevelChar(DecodeUtf8At(token, i, &length));
    if (byte < 0) {
      out->resize(start);
      return false;
    }
    out->push_back(static_cast<char>(byte));
    i += length;
  }
  return true;
}

}  // namespace kiln::models
