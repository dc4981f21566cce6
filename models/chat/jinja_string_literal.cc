#include "models/chat/jinja_string_literal.h"

#include <cstdio>

#include "models/chat/jinja_unicode.h"

namespace kiln::models::jinja {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  const char l = static_cast<char>(c | 0x20);
  if (l >= 'a' && l <= 'f') return l - 'a' + 10;
  return -1;
}

// jinja2 first turns non-ASCII characters into backslash escapes
// (encode("ascii", "backslashreplace")); only a backslash right before one
// makes that visible: "\é" reads as the text "\xe9".
std::string BackslashReplace(char32_t c) {
  char buf[16];
  if (c <= 0xFF) {
    std::snprintf(buf, sizeof(buf), "x%02x", static_cast<unsigned>(c));
  } else if (c <= 0xFFFF) {
    std::snprintf(buf, sizeof(buf), "u%04x", static_cast<unsigned>(c));
  } else {
    std::snprintf(buf, sizeof(buf), "U%08x", static_cast<unsigned>(c));
  }
  return buf;
}

}  // namespace

absl::StatusOr<std::string> UnescapeStringLiteral(absl::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  size_t i = 0;
  while (i < raw.size()) {
    if (raw[i] != '\\' || i + 1 >= raw.size()) {
      out.push_back(raw[i++]);
      continue;
    }
    const char e = raw[i + 1];
    i += 2;
    switch (e) {
      case '\n':
        continue;
      case '\\':
      case '\'':
      case '"':
        out.push_back(e);
        continue;
      case 'a':
        out.push_back('\a');
        continue;
      case 'b':
        out.push_back('\b');
        continue;
      case 'f':
        out.push_back('\f');
        continue;
      case 'n':
        out.push_back('\n');
        continue;
      case 'r':
        out.push_back('\r');
        continue;
      case 't':
        out.push_back('\t');
        continue;
      case 'v':
        out.push_back('\v');
        continue;
      case 'N':
        return absl::InvalidArgumentError("\\N{...} escapes are not supported");
      default:
        break;
    }
    if (e >= '0' && e <= '7') {
      char32_t value = static_cast<char32_t>(e - '0');
      for (int k = 0; k < 2 && i < raw.size() && raw[i] >= '0' && raw[i] <= '7'; ++k) {
        value = value * 8 + static_cast<char32_t>(raw[i++] - '0');
      }
      AppendCodePoint(value, &out);
      continue;
    }
    if (e == 'x' || e == 'u' || e == 'U') {
      const int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      char32_t value = 0;
      for (int k = 0; k < digits; ++k) {
        const int h = i + k < raw.size() ? HexValue(raw[i + k]) : -1;
        if (h < 0) {
          return absl::InvalidArgumentError(e == 'x'   ? "truncated \\xXX escape"
                                            : e == 'u' ? "truncated \\uXXXX escape"
                                                       : "truncated \\UXXXXXXXX escape");
        }
        value = value * 16 + static_cast<char32_t>(h);
      }
      i += static_cast<size_t>(digits);
      if (value > 0x10FFFF) return absl::InvalidArgumentError("illegal Unicode character");
      if (value >= 0xD800 && value <= 0xDFFF) {
        return absl::InvalidArgumentError("escapes of surrogate code points are not supported");
      }
      AppendCodePoint(value, &out);
      continue;
    }
    out.push_back('\\');
    if (static_cast<unsigned char>(e) >= 0x80) {
      size_t pos = i - 1;
      const char32_t c = NextCodePoint(raw, &pos);
      out += BackslashReplace(c);
      i = pos;
      continue;
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace kiln::models::jinja
