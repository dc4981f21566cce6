#include "models/chat/jinja_format.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "models/chat/jinja_builtins.h"
#include "models/chat/jinja_unicode.h"

namespace kiln::models::jinja {
namespace {

// One conversion's options, shared by both formatting styles.
struct Spec {
  char32_t fill = ' ';
  char align = 0;  // '<', '>', '^', '=' or 0 for the type's default
  char sign = '-';
  bool alternate = false;
  bool grouping = false;
  int width = -1;
  int precision = -1;
  char type = 0;
};

constexpr int kMaxWidth = 1 << 20;

absl::Status SpecError(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

std::string Pad(std::string sign, std::string body, const Spec& spec, bool numeric) {
  const size_t len = CodePointCount(sign) + CodePointCount(body);
  if (spec.width <= 0 || len >= static_cast<size_t>(spec.width)) return sign + body;
  const size_t pad = static_cast<size_t>(spec.width) - len;
  char align = spec.align ? spec.align : (numeric ? '>' : '<');
  std::string fill;
  for (size_t i = 0; i < pad; ++i) AppendCodePoint(spec.fill, &fill);
  switch (align) {
    case '<':
      return sign + body + fill;
    case '=':
      return sign + fill + body;
    case '^': {
      std::string left, right;
      for (size_t i = 0; i < pad / 2; ++i) AppendCodePoint(spec.fill, &left);
      for (size_t i = 0; i < pad - pad / 2; ++i) AppendCodePoint(spec.fill, &right);
      return left + sign + body + right;
    }
    default:
      return fill + sign + body;
  }
}

std::string SignOf(bool negative, const Spec& spec) {
  if (negative) return "-";
  if (spec.sign == '+') return "+";
  if (spec.sign == ' ') return " ";
  return "";
}

std::string Group(std::string digits) {
  std::string out;
  const size_t n = digits.size();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

absl::StatusOr<std::string> FormatInt(int64_t v, const Spec& spec) {
  const char type = spec.type ? spec.type : 'd';
  const bool negative = v < 0;
  const uint64_t mag = negative ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  int base = 10;
  std::string prefix;
  switch (type) {
    case 'd':
    case 'i':
    case 'u':
    case 'n':
      break;
    case 'x':
    case 'X':
      base = 16, prefix = type == 'x' ? "0x" : "0X";
      break;
    case 'o':
      base = 8, prefix = "0o";
      break;
    case 'b':
      base = 2, prefix = "0b";
      break;
    case 'c': {
      if (v < 0 || v > 0x10FFFF) return SpecError("%c arg not in range(0x110000)");
      std::string ch;
      AppendCodePoint(static_cast<char32_t>(v), &ch);
      return Pad("", ch, spec, false);
    }
    default:
      return SpecError(absl::StrCat("unsupported format character '", std::string(1, type), "'"));
  }
  char buf[80];
  const auto r = std::to_chars(buf, buf + sizeof(buf), mag, base);
  std::string digits(buf, r.ptr);
  if (type == 'X') {
    for (char& c : digits) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  if (spec.grouping && base == 10) digits = Group(digits);
  std::string sign = SignOf(negative, spec);
  if (spec.alternate) sign += prefix;
  return Pad(sign, digits, spec, true);
}

absl::StatusOr<std::string> FormatFloat(double v, const Spec& spec) {
  char type = spec.type;
  int precision = spec.precision;
  const bool negative = std::signbit(v) && !std::isnan(v);
  const double mag = std::fabs(v);
  std::string body;
  char buf[512];
  if (std::isinf(mag) || std::isnan(mag)) {
    body = std::isnan(mag) ? "nan" : "inf";
    if (type == 'F' || type == 'E' || type == 'G') body = std::isnan(mag) ? "NAN" : "INF";
  } else if (type == 0 && precision < 0) {
    body = FloatRepr(mag);
  } else {
    if (precision < 0) precision = 6;
    precision = std::min(precision, 300);
    double x = mag;
    std::chars_format fmt = std::chars_format::fixed;
    switch (type) {
      case 'f':
      case 'F':
        break;
      case '%':
        x *= 100;
        break;
      case 'e':
      case 'E':
        fmt = std::chars_format::scientific;
        break;
      case 'g':
      case 'G':
      case 0:
        fmt = std::chars_format::general;
        if (precision == 0) precision = 1;
        break;
      default:
        return SpecError(absl::StrCat("unsupported format character '", std::string(1, type), "'"));
    }
    const auto r = std::to_chars(buf, buf + sizeof(buf), x, fmt, precision);
    if (r.ec != std::errc()) return SpecError("float is too large to format");
    body.assign(buf, r.ptr);
    if (type == 0 && body.find_first_of(".e") == std::string::npos) body += ".0";
    if (type == '%') body += "%";
    if (type == 'E' || type == 'G') {
      for (char& c : body) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
  }
  return Pad(SignOf(negative, spec), body, spec, true);
}

std::string Truncate(const std::string& s, int precision) {
  if (precision < 0) return s;
  std::u32string cps = Decode(s);
  if (cps.size() > static_cast<size_t>(precision)) cps.resize(static_cast<size_t>(precision));
  return Encode(cps);
}

// format(value, spec) for str.format fields.
absl::StatusOr<std::string> FormatValue(const Value& v, const Spec& spec, bool empty_spec) {
  if (v.is_string()) {
    if (spec.type != 0 && spec.type != 's') {
      return SpecError(absl::StrCat("Unknown format code '", std::string(1, spec.type),
                                    "' for object of type 'str'"));
    }
    return Pad("", Truncate(v.str(), spec.precision), spec, false);
  }
  if (v.is_bool() && (spec.type == 0 || spec.type == 's')) return Pad("", Str(v), spec, false);
  if (v.is_integral()) {
    if (spec.type && absl::string_view("eEfFgG%").find(spec.type) != absl::string_view::npos) {
      return FormatFloat(static_cast<double>(v.int_value()), spec);
    }
    return FormatInt(v.int_value(), spec);
  }
  if (v.is_float()) return FormatFloat(v.float_value(), spec);
  if (!empty_spec) {
    return SpecError(absl::StrCat("unsupported format string passed to ", TypeName(v), ".__format__"));
  }
  return Str(v);
}

// Parses a str.format spec: [[fill]align][sign][#][0][width][,][.precision][type].
absl::StatusOr<Spec> ParseBraceSpec(absl::string_view s) {
  Spec spec;
  const std::u32string cps = Decode(s);
  size_t i = 0;
  const auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (cps.size() >= 2 && is_align(cps[1])) {
    spec.fill = cps[0];
    spec.align = static_cast<char>(cps[1]);
    i = 2;
  } else if (!cps.empty() && is_align(cps[0])) {
    spec.align = static_cast<char>(cps[0]);
    i = 1;
  }
  if (i < cps.size() && (cps[i] == '+' || cps[i] == '-' || cps[i] == ' ')) spec.sign = static_cast<char>(cps[i++]);
  if (i < cps.size() && cps[i] == '#') spec.alternate = true, ++i;
  if (i < cps.size() && cps[i] == '0') {
    if (!spec.align) spec.fill = '0', spec.align = '=';
    ++i;
  }
  const auto number = [&](int* out) {
    int n = 0;
    bool any = false;
    while (i < cps.size() && cps[i] >= '0' && cps[i] <= '9') {
      n = std::min(n * 10 + static_cast<int>(cps[i] - '0'), kMaxWidth);
      ++i;
      any = true;
    }
    if (any) *out = n;
    return any;
  };
  number(&spec.width);
  if (i < cps.size() && cps[i] == ',') spec.grouping = true, ++i;
  if (i < cps.size() && cps[i] == '.') {
    ++i;
    if (!number(&spec.precision)) return SpecError("Format specifier missing precision");
  }
  if (i < cps.size()) spec.type = static_cast<char>(cps[i++]);
  if (i != cps.size() || spec.type < 0) return SpecError("Invalid format specifier");
  return spec;
}

absl::Status CheckWidth(CallContext& ctx, const Spec& spec) {
  return ctx.CheckSize(static_cast<size_t>(std::max(spec.width, 0)));
}

}  // namespace

std::string HtmlEscape(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

absl::StatusOr<Value> PercentFormat(CallContext& ctx, const Value& format, const Value& args) {
  const std::string& f = format.str();
  const bool tuple = args.is_list() && args.seq_kind() == SeqKind::kTuple;
  const std::vector<Value> single{args};
  const std::vector<Value>& values = tuple ? args.items() : single;
  size_t next = 0;
  bool used_mapping = false;
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out.push_back(f[i]);
      continue;
    }
    if (++i >= f.size()) return SpecError("incomplete format");
    const Value* value = nullptr;
    Value mapped;
    if (f[i] == '(') {
      const size_t close = f.find(')', i);
      if (close == std::string::npos) return SpecError("incomplete format key");
      if (!args.is_dict()) return SpecError("format requires a mapping");
      const Value* v = args.dict().Find(absl::string_view(f).substr(i + 1, close - i - 1));
      if (v == nullptr) return SpecError(absl::StrCat("'", f.substr(i + 1, close - i - 1), "'"));
      mapped = *v;
      value = &mapped;
      used_mapping = true;
      i = close + 1;
    }
    Spec spec;
    bool left = false, zero = false;
    for (; i < f.size() && absl::string_view("-+ #0").find(f[i]) != absl::string_view::npos; ++i) {
      if (f[i] == '-') left = true;
      if (f[i] == '0') zero = true;
      if (f[i] == '+') spec.sign = '+';
      if (f[i] == ' ' && spec.sign != '+') spec.sign = ' ';
      if (f[i] == '#') spec.alternate = true;
    }
    const auto take_number = [&](int* out_n) -> absl::Status {
      if (i < f.size() && f[i] == '*') {
        ++i;
        if (next >= values.size()) return SpecError("not enough arguments for format string");
        absl::StatusOr<int64_t> n = values[next].is_integral()
                                        ? absl::StatusOr<int64_t>(values[next].int_value())
                                        : SpecError("* wants int");
        ++next;
        if (!n.ok()) return n.status();
        *out_n = static_cast<int>(std::clamp<int64_t>(*n, -kMaxWidth, kMaxWidth));
        return absl::OkStatus();
      }
      int n = 0;
      bool any = false;
      for (; i < f.size() && f[i] >= '0' && f[i] <= '9'; ++i) {
        n = std::min(n * 10 + (f[i] - '0'), kMaxWidth);
        any = true;
      }
      if (any) *out_n = n;
      return absl::OkStatus();
    };
    if (absl::Status s = take_number(&spec.width); !s.ok()) return s;
    if (spec.width < -1) left = true, spec.width = -spec.width;
    if (i < f.size() && f[i] == '.') {
      ++i;
      spec.precision = 0;
      if (absl::Status s = take_number(&spec.precision); !s.ok()) return s;
    }
    while (i < f.size() && (f[i] == 'h' || f[i] == 'l' || f[i] == 'L')) ++i;
    if (i >= f.size()) return SpecError("incomplete format");
    const char type = f[i];
    if (type == '%') {
      out.push_back('%');
      continue;
    }
    if (value == nullptr) {
      if (next >= values.size()) return SpecError("not enough arguments for format string");
      value = &values[next++];
    }
    if (absl::Status s = CheckWidth(ctx, spec); !s.ok()) return s;
    spec.align = left ? '<' : 0;
    const bool numeric = absl::string_view("diuoxXeEfFgGc").find(type) != absl::string_view::npos;
    if (zero && !left && numeric && type != 'c') spec.fill = '0', spec.align = '=';
    absl::StatusOr<std::string> piece;
    if (type == 's' || type == 'r' || type == 'a') {
      const std::string text = type == 's' ? Str(*value) : Repr(*value);
      piece = Pad("", Truncate(text, spec.precision), spec, false);
    } else if (absl::string_view("diu").find(type) != absl::string_view::npos) {
      if (value->is_integral()) {
        spec.type = 'd';
        piece = FormatInt(value->int_value(), spec);
      } else if (value->is_float() && std::isfinite(value->float_value()) &&
                 std::fabs(value->float_value()) < 9.2e18) {
        spec.type = 'd';
        piece = FormatInt(static_cast<int64_t>(value->float_value()), spec);
      } else {
        piece = SpecError(absl::StrCat("%", std::string(1, type), " format: a real number is required, not ",
                                       TypeName(*value)));
      }
    } else if (type == 'x' || type == 'X' || type == 'o' || type == 'c') {
      spec.type = type;
      if (type == 'c' && value->is_string() && CodePointCount(value->str()) == 1) {
        piece = Pad("", value->str(), spec, false);
      } else if (!value->is_integral()) {
        piece = SpecError(absl::StrCat("%", std::string(1, type), " format: an integer is required, not ",
                                       TypeName(*value)));
      } else {
        piece = FormatInt(value->int_value(), spec);
      }
    } else if (absl::string_view("eEfFgG").find(type) != absl::string_view::npos) {
      if (!value->is_number()) {
        piece = SpecError(absl::StrCat("must be real number, not ", TypeName(*value)));
      } else {
        spec.type = type;
        piece = FormatFloat(value->number_value(), spec);
      }
    } else {
      piece = SpecError(absl::StrCat("unsupported format character '", std::string(1, type), "'"));
    }
    if (!piece.ok()) return piece.status();
    out += *piece;
    if (absl::Status s = ctx.CheckSize(out.size()); !s.ok()) return s;
  }
  if (!used_mapping && next < values.size() && !(args.is_dict() && !tuple)) {
    return SpecError("not all arguments converted during string formatting");
  }
  return format.markup() ? Value::Markup(std::move(out)) : Value::String(std::move(out));
}

absl::StatusOr<Value> BraceFormat(CallContext& ctx, const Value& format, const CallArgs& args) {
  const std::string& f = format.str();
  std::string out;
  size_t auto_index = 0;
  bool used_auto = false, used_manual = false;
  for (size_t i = 0; i < f.size(); ++i) {
    const char c = f[i];
    if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}') {
        out.push_back('}');
        ++i;
        continue;
      }
      return SpecError("Single '}' encountered in format string");
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    const size_t close = f.find('}', i);
    if (close == std::string::npos) return SpecError("expected '}' before end of string");
    const absl::string_view field = absl::string_view(f).substr(i + 1, close - i - 1);
    if (field.find('{') != absl::string_view::npos) {
      return absl::UnimplementedError("nested replacement fields in str.format are not supported");
    }
    i = close;
    const size_t colon = field.find(':');
    absl::string_view head = field.substr(0, colon);
    const absl::string_view spec_text = colon == absl::string_view::npos ? "" : field.substr(colon + 1);
    char conversion = 0;
    if (const size_t bang = head.find('!'); bang != absl::string_view::npos) {
      if (bang + 2 != head.size()) return SpecError("expected ':' after conversion specifier");
      conversion = head[bang + 1];
      head = head.substr(0, bang);
    }
    size_t end = head.find_first_of(".[");
    const absl::string_view arg_name = head.substr(0, end);
    Value value;
    if (arg_name.empty() || std::all_of(arg_name.begin(), arg_name.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      size_t index = auto_index;
      if (arg_name.empty()) {
        used_auto = true;
        ++auto_index;
      } else {
        used_manual = true;
        index = static_cast<size_t>(std::strtoull(std::string(arg_name).c_str(), nullptr, 10));
      }
      if (used_auto && used_manual) {
        return SpecError("cannot switch from automatic field numbering to manual field specification");
      }
      if (index >= args.positional.size()) {
        return SpecError(absl::StrCat("Replacement index ", index, " out of range for positional args tuple"));
      }
      value = args.positional[index];
    } else {
      bool found = false;
      for (const auto& [k, v] : args.keyword) {
        if (k == arg_name) value = v, found = true;
      }
      if (!found) return SpecError(absl::StrCat("'", arg_name, "'"));
    }
    while (end != absl::string_view::npos && end < head.size()) {
      if (head[end] == '.') {
        const size_t next = head.find_first_of(".[", end + 1);
        value = GetAttr(value, head.substr(end + 1, next - end - 1));
        end = next;
      } else {
        const size_t rb = head.find(']', end);
        if (rb == absl::string_view::npos) return SpecError("Missing ']' in format string");
        const absl::string_view key = head.substr(end + 1, rb - end - 1);
        const bool digits = !key.empty() && std::all_of(key.begin(), key.end(), [](char d) { return d >= '0' && d <= '9'; });
        value = GetItem(value, digits ? Value::Int(std::strtoll(std::string(key).c_str(), nullptr, 10))
                                      : Value::String(std::string(key)));
        end = rb + 1;
      }
    }
    if (conversion == 'r' || conversion == 'a') {
      value = Value::String(Repr(value));
    } else if (conversion == 's') {
      value = Value::String(Str(value));
    } else if (conversion != 0) {
      return SpecError(absl::StrCat("Unknown conversion specifier ", std::string(1, conversion)));
    }
    absl::StatusOr<Spec> spec = ParseBraceSpec(spec_text);
    if (!spec.ok()) return spec.status();
    if (absl::Status s = CheckWidth(ctx, *spec); !s.ok()) return s;
    absl::StatusOr<std::string> piece = FormatValue(value, *spec, spec_text.empty());
    if (!piece.ok()) return piece.status();
    out += *piece;
    if (absl::Status s = ctx.CheckSize(out.size()); !s.ok()) return s;
  }
  return Value::String(std::move(out));
}

}  // namespace kiln::models::jinja
