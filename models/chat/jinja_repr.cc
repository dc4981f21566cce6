// Python's repr() and str() of template values, which `{{ x }}` prints.
#include <charconv>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "models/chat/jinja_unicode.h"
#include "models/chat/jinja_value.h"

namespace kiln::models::jinja {
namespace {

// Past this nesting (deeper than any list or dict may be, so only reached
// through namespaces that hold themselves) repr prints "...", as Python
// does for recursive containers.
constexpr int kMaxReprDepth = 300;

void AppendHexEscape(char prefix, int digits, uint32_t cp, std::string* out) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "\\%c%0*x", prefix, digits, static_cast<unsigned>(cp));
  out->append(buf);
}

void AppendItems(const std::vector<Value>& items, std::string* out, int depth) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out->append(", ");
    AppendRepr(items[i], out, depth + 1);
  }
}

void AppendDictRepr(const std::vector<std::pair<Value, Value>>& entries, std::string* out,
                    int depth) {
  out->push_back('{');
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out->append(", ");
    AppendRepr(entries[i].first, out, depth + 1);
    out->append(": ");
    AppendRepr(entries[i].second, out, depth + 1);
  }
  out->push_back('}');
}

void AppendListRepr(const Value& v, std::string* out, int depth) {
  const std::vector<Value>& items = v.items();
  switch (v.seq_kind()) {
    case SeqKind::kList:
      out->push_back('[');
      AppendItems(items, out, depth);
      out->push_back(']');
      return;
    case SeqKind::kTuple:
      out->push_back('(');
      AppendItems(items, out, depth);
      if (items.size() == 1) out->push_back(',');
      out->push_back(')');
      return;
    case SeqKind::kIterator:
      // Python prints an address here; no template can rely on it.
      out->append("<generator object>");
      return;
    case SeqKind::kDictKeys:
    case SeqKind::kDictValues:
    case SeqKind::kDictItems:
      out->append(TypeName(v));
      out->append("([");
      AppendItems(items, out, depth);
      out->append("])");
      return;
  }
}

}  // namespace

std::string FloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  const absl::string_view sci(buf, static_cast<size_t>(result.ptr - buf));
  // sci is "[-]d[.ddd]e[+-]dd": split it into sign, digits and exponent.
  std::string out;
  size_t i = 0;
  if (sci[0] == '-') {
    out.push_back('-');
    i = 1;
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t k = i; k < e; ++k) {
    if (sci[k] != '.') digits.push_back(sci[k]);
  }
  int exponent = 0;
  std::from_chars(sci.data() + e + (sci[e + 1] == '+' ? 2 : 1), sci.data() + sci.size(), exponent);
  const int ndigits = static_cast<int>(digits.size());
  const int decpt = exponent + 1;  // digits[0] sits just before this position
  if (decpt <= -4 || decpt > 16) {
    out.push_back(digits[0]);
    if (ndigits > 1) absl::StrAppend(&out, ".", digits.substr(1));
    const int x = decpt - 1;
    char ebuf[16];
    std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
    out.append(ebuf);
  } else if (decpt <= 0) {
    absl::StrAppend(&out, "0.", std::string(static_cast<size_t>(-decpt), '0'), digits);
  } else if (decpt >= ndigits) {
    absl::StrAppend(&out, digits, std::string(static_cast<size_t>(decpt - ndigits), '0'), ".0");
  } else {
    absl::StrAppend(&out, digits.substr(0, decpt), ".", digits.substr(decpt));
  }
  return out;
}

void AppendStringRepr(absl::string_view s, std::string* out) {
  const bool has_single = s.find('\'') != absl::string_view::npos;
  const bool has_double = s.find('"') != absl::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  out->push_back(quote);
  for (size_t pos = 0; pos < s.size();) {
    const char32_t c = NextCodePoint(s, &pos);
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
    } else if (c == '\t') {
      out->append("\\t");
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '\r') {
      out->append("\\r");
    } else if (IsPrintable(c)) {
      AppendCodePoint(c, out);
    } else if (c <= 0xFF) {
      AppendHexEscape('x', 2, c, out);
    } else if (c <= 0xFFFF) {
      AppendHexEscape('u', 4, c, out);
    } else {
      AppendHexEscape('U', 8, c, out);
    }
  }
  out->push_back(quote);
}

void AppendRepr(const Value& v, std::string* out, int depth) {
  if (depth > kMaxReprDepth) {
    out->append("...");
    return;
  }
  switch (v.kind()) {
    case Kind::kUndefined:
      out->append("Undefined");
      return;
    case Kind::kNone:
      out->append("None");
      return;
    case Kind::kBool:
      out->append(v.bool_value() ? "True" : "False");
      return;
    case Kind::kInt:
      absl::StrAppend(out, v.int_value());
      return;
    case Kind::kFloat:
      out->append(FloatRepr(v.float_value()));
      return;
    case Kind::kString:
      if (v.markup()) out->append("Markup(");
      AppendStringRepr(v.str(), out);
      if (v.markup()) out->push_back(')');
      return;
    case Kind::kList:
      AppendListRepr(v, out, depth);
      return;
    case Kind::kDict:
      AppendDictRepr(v.dict().entries(), out, depth);
      return;
    case Kind::kNamespace: {
      std::vector<std::pair<Value, Value>> entries;
      for (const auto& [k, value] : v.ns()->attrs()) entries.emplace_back(Value::String(k), value);
      out->append("<Namespace ");
      AppendDictRepr(entries, out, depth);
      out->push_back('>');
      return;
    }
    case Kind::kCallable:
      out->append(v.callable().Repr());
      return;
    case Kind::kObject:
      out->append(v.object().Repr());
      return;
  }
}

void AppendStr(const Value& v, std::string* out) {
  if (v.is_string()) {
    out->append(v.str());
  } else if (!v.is_undefined()) {
    AppendRepr(v, out, 0);
  }
}

std::string Repr(const Value& v) {
  std::string out;
  AppendRepr(v, &out, 0);
  return out;
}

std::string Str(const Value& v) {
  std::string out;
  AppendStr(v, &out);
  return out;
}

}  // namespace kiln::models::jinja
