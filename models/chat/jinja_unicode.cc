#include "models/chat/jinja_unicode.h"

#include <algorithm>

#include "utf8proc.h"

namespace kiln::models::jinja {
namespace {

constexpr char32_t kEscapeBase = 0xDC80;  // surrogateescape: U+DC80 + byte

utf8proc_category_t Category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

}  // namespace

char32_t NextCodePoint(absl::string_view s, size_t* pos) {
  const size_t i = *pos;
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    *pos = i + 1;
    return b0;
  }
  int len = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  }
  if (len == 0 || i + len > s.size()) {
    *pos = i + 1;
    return kEscapeBase + b0;
  }
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) {
      *pos = i + 1;
      return kEscapeBase + b0;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    *pos = i + 1;
    return kEscapeBase + b0;
  }
  *pos = i + len;
  return cp;
}

std::u32string Decode(absl::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) out.push_back(NextCodePoint(s, &pos));
  return out;
}

void AppendCodePoint(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp >= kEscapeBase && cp < kEscapeBase + 0x100) {
    out->push_back(static_cast<char>(cp - kEscapeBase));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string Encode(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t c : cps) AppendCodePoint(c, &out);
  return out;
}

bool IsAscii(absl::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

size_t CodePointCount(absl::string_view s) {
  if (IsAscii(s)) return s.size();
  size_t n = 0;
  for (size_t pos = 0; pos < s.size(); ++n) NextCodePoint(s, &pos);
  return n;
}

bool IsSpace(char32_t c) {
  if (c < 0x80) return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool IsPrintable(char32_t c) {
  if (c < 0x80) return c >= 0x20 && c < 0x7F;
  if (c >= kEscapeBase && c < kEscapeBase + 0x100) return false;
  switch (Category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

bool IsAlpha(char32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  switch (Category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return true;
    default:
      return false;
  }
}

bool IsDecimal(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return Category(c) == UTF8PROC_CATEGORY_ND;
}

bool IsNumeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const utf8proc_category_t cat = Category(c);
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL ||
         cat == UTF8PROC_CATEGORY_NO;
}

bool IsAlnum(char32_t c) { return IsAlpha(c) || IsNumeric(c); }
bool IsWordChar(char32_t c) { return c == '_' || IsAlnum(c); }

bool IsUpper(char32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z';
  return Category(c) == UTF8PROC_CATEGORY_LU;
}

bool IsLower(char32_t c) {
  if (c < 0x80) return c >= 'a' && c <= 'z';
  return Category(c) == UTF8PROC_CATEGORY_LL;
}

bool IsCased(char32_t c) { return IsUpper(c) || IsLower(c) || Category(c) == UTF8PROC_CATEGORY_LT; }

char32_t ToUpper(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  // utf8proc maps ß to U+1E9E; Unicode's simple mapping keeps it.
  if ((c >= kEscapeBase && c < kEscapeBase + 0x100) || c == 0xDF) return c;
  return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c)));
}

char32_t ToLower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (c >= kEscapeBase && c < kEscapeBase + 0x100) return c;
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
}

char32_t ToTitle(char32_t c) {
  if (c < 0x80) return ToUpper(c);
  if ((c >= kEscapeBase && c < kEscapeBase + 0x100) || c == 0xDF) return c;
  return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c)));
}

namespace {

template <typename F>
std::string MapCodePoints(absl::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  size_t index = 0;
  for (size_t pos = 0; pos < s.size(); ++index) AppendCodePoint(f(NextCodePoint(s, &pos), index), &out);
  return out;
}

}  // namespace

namespace {

// The unconditional SpecialCasing.txt uppercase expansions Python applies
// (str.upper uses full case mapping); utf8proc only has the simple one.
const char* FullUpper(char32_t c) {
  switch (c) {
    case 0xDF:
      return "SS";
    case 0x149:
      return "\u02BCN";
    case 0x1F0:
      return "J\u030C";
    case 0x587:
      return "\u0535\u0552";
    case 0xFB00:
      return "FF";
    case 0xFB01:
      return "FI";
    case 0xFB02:
      return "FL";
    case 0xFB03:
      return "FFI";
    case 0xFB04:
      return "FFL";
    case 0xFB05:
    case 0xFB06:
      return "ST";
    default:
      return nullptr;
  }
}

}  // namespace

std::string Upper(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    const char32_t c = NextCodePoint(s, &pos);
    if (const char* full = FullUpper(c)) {
      out += full;
    } else {
      AppendCodePoint(ToUpper(c), &out);
    }
  }
  return out;
}

std::string Lower(absl::string_view s) {
  return MapCodePoints(s, [](char32_t c, size_t) { return ToLower(c); });
}

std::string Capitalize(absl::string_view s) {
  return MapCodePoints(s, [](char32_t c, size_t i) { return i == 0 ? ToTitle(c) : ToLower(c); });
}

std::string SwapCase(absl::string_view s) {
  return MapCodePoints(s, [](char32_t c, size_t) {
    return IsUpper(c) ? ToLower(c) : IsLower(c) ? ToUpper(c) : c;
  });
}

std::string PyTitle(absl::string_view s) {
  bool previous_cased = false;
  return MapCodePoints(s, [&](char32_t c, size_t) {
    const char32_t mapped = previous_cased ? ToLower(c) : ToTitle(c);
    previous_cased = IsCased(c);
    return mapped;
  });
}

std::string Strip(absl::string_view s, const std::string* chars, bool left, bool right) {
  const std::u32string cps = Decode(s);
  const std::u32string set = chars ? Decode(*chars) : std::u32string();
  const auto strip = [&](char32_t c) {
    return chars ? set.find(c) != std::u32string::npos : IsSpace(c);
  };
  size_t begin = 0, end = cps.size();
  if (left) {
    while (begin < end && strip(cps[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strip(cps[end - 1])) --end;
  }
  return Encode(std::u32string_view(cps).substr(begin, end - begin));
}

}  // namespace kiln::models::jinja
