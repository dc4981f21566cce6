#include "models/text/utf8.h"

namespace kiln::models {
namespace {

// The length of the well-formed sequence starting at bytes[i], 0 when
// bytes[i] starts none (a maximal subpart of one byte, or more: see
// IllFormedLength), or -n when the n bytes left are a valid but unfinished
// start.
int SequenceLength(absl::string_view bytes, size_t i) {
  const auto at = [&](size_t k) { return static_cast<uint8_t>(bytes[k]); };
  const uint8_t b0 = at(i);
  if (b0 < 0x80) return 1;
  int need;
  uint8_t lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (int k = 1; k < need; ++k) {
    if (i + k >= bytes.size()) return -k;
    const uint8_t b = at(i + k);
    const bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return 0;
  }
  return need;
}

// How many bytes from i form one maximal subpart of an ill-formed sequence:
// the lead byte and the continuation bytes that were still allowed after it.
size_t IllFormedLength(absl::string_view bytes, size_t i) {
  size_t n = 1;
  while (i + n < bytes.size()) {
    const int len = SequenceLength(bytes.substr(0, i + n + 1), i);
    // A prefix that is still a valid unfinished start grows the subpart.
    if (len < 0 && static_cast<size_t>(-len) == n + 1) {
      ++n;
    } else {
      break;
    }
  }
  return n;
}

}  // namespace

std::string ToValidUtf8(absl::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    const int len = SequenceLength(bytes, i);
    if (len > 0) {
      out.append(bytes.data() + i, static_cast<size_t>(len));
      i += len;
      continue;
    }
    out.append("\xEF\xBF\xBD");
    i += len < 0 ? static_cast<size_t>(-len) : IllFormedLength(bytes, i);
  }
  return out;
}

size_t CompleteUtf8Prefix(absl::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    const int len = SequenceLength(bytes, i);
    if (len < 0) return i;  // an unfinished character at the end
    i += len > 0 ? static_cast<size_t>(len) : IllFormedLength(bytes, i);
  }
  return i;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
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

}  // namespace kiln::models
