#include "models/text/unicode_chars.h"

#include <utf8proc.h>

#include "models/text/utf8.h"

namespace kiln::models {

int32_t DecodeUtf8At(absl::string_view bytes, size_t i, size_t* length) {
  utf8proc_int32_t cp = -1;
  const utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(bytes.data() + i),
                                              static_cast<utf8proc_ssize_t>(bytes.size() - i), &cp);
  if (n <= 0) {
    *length = 1;
    return -1;
  }
  *length = static_cast<size_t>(n);
  return cp;
}

bool IsValidUtf8(absl::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    if (static_cast<uint8_t>(bytes[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    if (DecodeUtf8At(bytes, i, &n) < 0) return false;
    i += n;
  }
  return true;
}

bool IsWhitespace(int32_t cp) {
  if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20;
  switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool IsNumeric(int32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  const utf8proc_category_t c = utf8proc_category(cp);
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

bool IsPunctuation(int32_t cp) {
  if (cp < 0x80) {
    return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
           (cp >= 0x7B && cp <= 0x7E);
  }
  const utf8proc_category_t c = utf8proc_category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

void AppendLowercase(int32_t cp, std::string* out) {
  // The one unconditional SpecialCasing lowercase that is longer than a
  // character: İ becomes i + combining dot above.
  if (cp == 0x130) {
    out->append("i\xCC\x87");
    return;
  }
  AppendUtf8(static_cast<uint32_t>(utf8proc_tolower(cp)), out);
}

}  // namespace kiln::models
