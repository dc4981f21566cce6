// The filters on single values (strings, numbers), and the filter table.
// Each follows jinja2 3.1's filters.py in a non-autoescaping environment,
// except `tojson`, which is transformers' json.dumps.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "models/chat/jinja_args.h"
#include "models/chat/jinja_builtins.h"
#include "models/chat/jinja_filters_impl.h"
#include "models/chat/jinja_format.h"
#include "models/chat/jinja_json.h"
#include "models/chat/jinja_str_methods.h"
#include "models/chat/jinja_unicode.h"

namespace kiln::models::jinja {
namespace {

absl::Status TypeError(std::string m) { return absl::InvalidArgumentError(std::move(m)); }

// markupsafe's soft_str: str(value), keeping a Markup a Markup.
Value SoftStr(const Value& v) { return v.is_string() ? v : Value::String(Str(v)); }

Value Like(const Value& v, std::string s) {
  return v.markup() ? Value::Markup(std::move(s)) : Value::String(std::move(s));
}

// Calls a str method on soft_str(input) with the filter's arguments.
absl::StatusOr<Value> ViaStrMethod(CallContext& ctx, const Value& input, absl::string_view method,
                                   CallArgs& args) {
  return CallStrMethod(ctx, SoftStr(input), method, args);
}

KILN_JINJA_FILTER(FilterAbs) {
  if (absl::Status s = NoArgs(args, "filter 'abs'"); !s.ok()) return s;
  if (input.is_float()) return Value::Float(std::fabs(input.float_value()));
  if (input.is_integral()) {
    if (input.int_value() == std::numeric_limits<int64_t>::min()) return TypeError("integer overflow");
    return Value::Int(std::llabs(input.int_value()));
  }
  if (input.is_undefined()) return TypeError(input.undefined_message());
  return TypeError(absl::StrCat("bad operand type for abs(): '", TypeName(input), "'"));
}

KILN_JINJA_FILTER(FilterAttr) {
  ArgBinder a("filter 'attr'", args, {"name"});
  if (!a.ok()) return a.status();
  if (absl::Status s = a.Require(1); !s.ok()) return s;
  absl::StatusOr<std::string> name = StrArg(a[0], "attribute name");
  if (!name.ok()) return name.status();
  // Attributes only: a dict's keys are not attributes.
  bool mutating = false;
  if (IsMethod(input, *name, &mutating) || input.is_namespace() || input.is_object()) {
    return GetAttr(input, *name);
  }
  return MissingAttribute(input, Value::String(*name));
}

KILN_JINJA_FILTER(FilterCapitalize) { return ViaStrMethod(ctx, input, "capitalize", args); }
KILN_JINJA_FILTER(FilterLower) { return ViaStrMethod(ctx, input, "lower", args); }
KILN_JINJA_FILTER(FilterUpper) { return ViaStrMethod(ctx, input, "upper", args); }

KILN_JINJA_FILTER(FilterCenter) {
  ArgBinder a("filter 'center'", args, {"width"});
  if (!a.ok()) return a.status();
  CallArgs method_args;
  method_args.positional.push_back(a.get(0, Value::Int(80)));
  return CallStrMethod(ctx, SoftStr(input), "center", method_args);
}

KILN_JINJA_FILTER(FilterTitle) {
  if (absl::Status s = NoArgs(args, "filter 'title'"); !s.ok()) return s;
  // jinja2 capitalizes each piece split at runs of - whitespace ( { [ <.
  const std::u32string s = Decode(Str(input));
  std::string out;
  bool at_start = true;
  for (char32_t c : s) {
    const bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || IsSpace(c);
    if (sep) {
      AppendCodePoint(c, &out);
      at_start = true;
    } else {
      AppendCodePoint(at_start ? ToUpper(c) : ToLower(c), &out);
      at_start = false;
    }
  }
  return Value::String(std::move(out));
}

KILN_JINJA_FILTER(FilterLength) {
  if (absl::Status s = NoArgs(args, "filter 'length'"); !s.ok()) return s;
  if (std::optional<int64_t> n = Length(input)) return Value::Int(*n);
  return TypeError(absl::StrCat("object of type '", TypeName(input), "' has no len()"));
}

KILN_JINJA_FILTER(FilterDefault) {
  ArgBinder a("filter 'default'", args, {"default_value", "boolean"});
  if (!a.ok()) return a.status();
  const bool boolean = a.has(1) && Truthy(a[1]);
  if (input.is_undefined() || (boolean && !Truthy(input))) return a.get(0, Value::String(""));
  return input;
}

KILN_JINJA_FILTER(FilterEscape) {
  if (absl::Status s = NoArgs(args, "filter 'escape'"); !s.ok()) return s;
  if (input.markup()) return input;
  return Value::Markup(HtmlEscape(Str(input)));
}

KILN_JINJA_FILTER(FilterForceescape) {
  if (absl::Status s = NoArgs(args, "filter 'forceescape'"); !s.ok()) return s;
  return Value::Markup(HtmlEscape(Str(input)));
}

KILN_JINJA_FILTER(FilterSafe) {
  if (absl::Status s = NoArgs(args, "filter 'safe'"); !s.ok()) return s;
  return Value::Markup(Str(input));
}

KILN_JINJA_FILTER(FilterString) {
  if (absl::Status s = NoArgs(args, "filter 'string'"); !s.ok()) return s;
  return SoftStr(input);
}

KILN_JINJA_FILTER(FilterFormat) {
  if (!args.positional.empty() && !args.keyword.empty()) {
    return TypeError("can't handle positional and keyword arguments at the same time");
  }
  Value values;
  if (!args.keyword.empty()) {
    Dict d;
    for (auto& [k, v] : args.keyword) d.Set(Value::String(k), v);
    values = Value::FromDict(std::move(d));
  } else {
    values = Value::Tuple(args.positional);
  }
  return PercentFormat(ctx, SoftStr(input), values);
}

KILN_JINJA_FILTER(FilterReplace) {
  ArgBinder a("filter 'replace'", args, {"old", "new", "count"});
  if (!a.ok()) return a.status();
  if (absl::Status s = a.Require(2); !s.ok()) return s;
  CallArgs method_args;
  method_args.positional = {Value::String(Str(a[0])), Value::String(Str(a[1]))};
  if (a.has(2) && !a[2].is_none()) method_args.positional.push_back(a[2]);
  return CallStrMethod(ctx, Value::String(Str(input)), "replace", method_args);
}

KILN_JINJA_FILTER(FilterTrim) {
  ArgBinder a("filter 'trim'", args, {"chars"});
  if (!a.ok()) return a.status();
  CallArgs method_args;
  if (a.has(0)) method_args.positional.push_back(a[0]);
  return CallStrMethod(ctx, SoftStr(input), "strip", method_args);
}

KILN_JINJA_FILTER(FilterWordcount) {
  if (absl::Status s = NoArgs(args, "filter 'wordcount'"); !s.ok()) return s;
  int64_t words = 0;
  bool in_word = false;
  for (char32_t c : Decode(Str(input))) {
    const bool w = IsWordChar(c);
    if (w && !in_word) ++words;
    in_word = w;
  }
  return Value::Int(words);
}

KILN_JINJA_FILTER(FilterIndent) {
  ArgBinder a("filter 'indent'", args, {"width", "first", "blank"});
  if (!a.ok()) return a.status();
  const Value width = a.get(0, Value::Int(4));
  std::string indention;
  if (width.is_string()) {
    indention = width.str();
  } else {
    absl::StatusOr<int64_t> n = IntArg(width, "filter 'indent' width");
    if (!n.ok()) return n.status();
    if (absl::Status s = ctx.CheckSize(static_cast<size_t>(std::max<int64_t>(*n, 0))); !s.ok()) return s;
    indention.assign(static_cast<size_t>(std::max<int64_t>(*n, 0)), ' ');
  }
  const bool first = a.has(1) && Truthy(a[1]);
  const bool blank = a.has(2) && Truthy(a[2]);
  CallArgs no_args;
  absl::StatusOr<Value> lines = CallStrMethod(ctx, Value::String(Str(input) + "\n"), "splitlines", no_args);
  if (!lines.ok()) return lines.status();
  const std::vector<Value>& parts = lines->items();
  std::string rv;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) {
      rv += "\n";
      if (blank || !parts[i].str().empty()) rv += indention;
    }
    rv += parts[i].str();
    if (absl::Status s = ctx.CheckSize(rv.size()); !s.ok()) return s;
  }
  if (first) rv = indention + rv;
  return Like(input, std::move(rv));
}

KILN_JINJA_FILTER(FilterTruncate) {
  ArgBinder a("filter 'truncate'", args, {"length", "killwords", "end", "leeway"});
  if (!a.ok()) return a.status();
  absl::StatusOr<int64_t> length = IntArg(a.get(0, Value::Int(255)), "filter 'truncate' length");
  if (!length.ok()) return length.status();
  const bool killwords = a.has(1) && Truthy(a[1]);
  absl::StatusOr<std::string> end = StrArg(a.get(2, Value::String("...")), "filter 'truncate' end");
  if (!end.ok()) return end.status();
  absl::StatusOr<int64_t> leeway = IntArg(a.get(3, Value::Int(5)), "filter 'truncate' leeway");
  if (!leeway.ok()) return leeway.status();
  const std::u32string s = Decode(Str(input));
  const auto end_len = static_cast<int64_t>(CodePointCount(*end));
  if (*length < end_len) return TypeError(absl::StrCat("expected length >= ", end_len, ", got ", *length));
  if (*leeway < 0) return TypeError(absl::StrCat("expected leeway >= 0, got ", *leeway));
  if (static_cast<int64_t>(s.size()) <= *length + *leeway) return Value::String(Encode(s));
  std::u32string head = s.substr(0, static_cast<size_t>(*length - end_len));
  if (!killwords) {
    const size_t space = head.rfind(U' ');
    if (space != std::u32string::npos) head.resize(space);
  }
  return Value::String(Encode(head) + *end);
}

// Python's int(str, base): whitespace, sign, underscores between digits,
// and a matching 0x/0o/0b prefix.
std::optional<int64_t> ParsePyInt(absl::string_view text, int base) {
  const std::string stripped = Strip(text, nullptr, true, true);
  absl::string_view s = stripped;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.size() > 1 && s[0] == '0') {
    const char p = static_cast<char>(s[1] | 0x20);
    const int prefixed = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (prefixed != 0 && (base == 0 || base == prefixed)) {
      base = prefixed;
      s.remove_prefix(2);
      if (!s.empty() && s[0] == '_') s.remove_prefix(1);
    }
  }
  if (base == 0) base = 10;
  if (base < 2 || base > 36 || s.empty() || s.front() == '_' || s.back() == '_') return std::nullopt;
  std::string digits;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (s[i + 1] == '_') return std::nullopt;
      continue;
    }
    digits.push_back(s[i]);
  }
  uint64_t value = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) return std::nullopt;
  if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return negative ? -static_cast<int64_t>(value) : static_cast<int64_t>(value);
}

// Python's float(str).
std::optional<double> ParsePyFloat(absl::string_view text) {
  std::string s = Lower(Strip(text, nullptr, true, true));
  absl::string_view body = s;
  bool negative = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body == "inf" || body == "infinity") {
    return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  if (body == "nan") return std::numeric_limits<double>::quiet_NaN();
  std::string clean;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c == '_') {
      // Only between two digits.
      if (i == 0 || i + 1 >= body.size() || !std::isdigit(static_cast<unsigned char>(body[i - 1])) ||
          !std::isdigit(static_cast<unsigned char>(body[i + 1]))) {
        return std::nullopt;
      }
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != '+' && c != '-') {
      return std::nullopt;
    }
    clean.push_back(c);
  }
  if (clean.empty()) return std::nullopt;
  double value = 0;
  const auto r = std::from_chars(clean.data(), clean.data() + clean.size(), value);
  if (r.ptr != clean.data() + clean.size()) return std::nullopt;
  if (r.ec == std::errc::result_out_of_range) {
    const size_t e = clean.find('e');
    value = (e != std::string::npos && clean[e + 1] != '-') ? std::numeric_limits<double>::infinity() : 0.0;
  } else if (r.ec != std::errc()) {
    return std::nullopt;
  }
  return negative ? -value : value;
}

KILN_JINJA_FILTER(FilterInt) {
  ArgBinder a("filter 'int'", args, {"default", "base"});
  if (!a.ok()) return a.status();
  const Value fallback = a.get(0, Value::Int(0));
  absl::StatusOr<int64_t> base = IntArg(a.get(1, Value::Int(10)), "filter 'int' base");
  if (!base.ok()) return base.status();
  if (input.is_undefined()) return TypeError(input.undefined_message());
  if (input.is_integral()) return Value::Int(input.int_value());
  if (input.is_float() || input.is_string()) {
    if (input.is_string()) {
      if (std::optional<int64_t> v = ParsePyInt(input.str(), static_cast<int>(*base))) return Value::Int(*v);
    }
    std::optional<double> d = input.is_float() ? std::optional<double>(input.float_value())
                                               : ParsePyFloat(input.str());
    if (!d || std::isnan(*d)) return fallback;
    if (std::isinf(*d)) {
      if (input.is_float()) return TypeError("cannot convert float infinity to integer");
      return fallback;
    }
    if (std::fabs(*d) >= 9.2e18) return TypeError("integer overflow (kiln's ints are 64-bit)");
    return Value::Int(static_cast<int64_t>(*d));
  }
  return fallback;
}

KILN_JINJA_FILTER(FilterFloat) {
  ArgBinder a("filter 'float'", args, {"default"});
  if (!a.ok()) return a.status();
  const Value fallback = a.get(0, Value::Float(0.0));
  if (input.is_undefined()) return TypeError(input.undefined_message());
  if (input.is_number()) return Value::Float(input.number_value());
  if (input.is_string()) {
    if (std::optional<double> d = ParsePyFloat(input.str())) return Value::Float(*d);
  }
  return fallback;
}

// Python's round(x, n) on a float: the correctly rounded decimal.
double RoundFloat(double x, int64_t digits) {
  if (!std::isfinite(x) || digits > 320) return x;
  if (digits < 0) {
    if (digits < -320) return std::copysign(0.0, x);
    const double scale = std::pow(10.0, static_cast<double>(-digits));
    return std::nearbyint(x / scale) * scale;
  }
  char buf[512];
  const auto r = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::fixed, static_cast<int>(digits));
  if (r.ec != std::errc()) return x;
  double out = x;
  std::from_chars(buf, r.ptr, out);
  return out;
}

KILN_JINJA_FILTER(FilterRound) {
  ArgBinder a("filter 'round'", args, {"precision", "method"});
  if (!a.ok()) return a.status();
  absl::StatusOr<int64_t> precision = IntArg(a.get(0, Value::Int(0)), "filter 'round' precision");
  if (!precision.ok()) return precision.status();
  const Value method = a.get(1, Value::String("common"));
  if (!method.is_string() || (method.str() != "common" && method.str() != "ceil" && method.str() != "floor")) {
    return TypeError("method must be common, ceil or floor");
  }
  if (input.is_undefined()) return TypeError(input.undefined_message());
  if (!input.is_number()) {
    return TypeError(absl::StrCat("type ", TypeName(input), " doesn't define __round__ method"));
  }
  if (method.str() == "common") {
    if (input.is_integral()) {
      if (*precision >= 0) return Value::Int(input.int_value());
      return Value::Int(static_cast<int64_t>(RoundFloat(static_cast<double>(input.int_value()), *precision)));
    }
    return Value::Float(RoundFloat(input.float_value(), *precision));
  }
  const double scale = std::pow(10.0, static_cast<double>(std::clamp<int64_t>(*precision, -400, 400)));
  const double v = input.number_value() * scale;
  return Value::Float((method.str() == "ceil" ? std::ceil(v) : std::floor(v)) / scale);
}

KILN_JINJA_FILTER(FilterToJson) {
  ArgBinder a("filter 'tojson'", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  if (!a.ok()) return a.status();
  JsonDumpsOptions options;
  options.ensure_ascii = a.has(0) && Truthy(a[0]);
  options.sort_keys = a.has(3) && Truthy(a[3]);
  if (a.has(1) && !a[1].is_none()) {
    if (a[1].is_string()) {
      options.indent = a[1].str();
    } else if (a[1].is_integral()) {
      const int64_t n = std::clamp<int64_t>(a[1].int_value(), 0, 1 << 16);
      options.indent = std::string(static_cast<size_t>(n), ' ');
    } else {
      return TypeError(absl::StrCat("can't multiply sequence by non-int of type '", TypeName(a[1]), "'"));
    }
    options.item_separator = ",";
  }
  if (a.has(2) && !a[2].is_none()) {
    const Value& sep = a[2];
    if (!sep.is_list() || sep.items().size() != 2 || !sep.items()[0].is_string() ||
        !sep.items()[1].is_string()) {
      return TypeError("separators must be a (item_separator, key_separator) pair of str");
    }
    options.item_separator = sep.items()[0].str();
    options.key_separator = sep.items()[1].str();
  }
  absl::StatusOr<std::string> out = JsonDumps(input, options, ctx.max_value_bytes());
  if (!out.ok()) return out.status();
  if (absl::Status s = ctx.CheckSize(out->size()); !s.ok()) return s;
  return Value::String(*std::move(out));
}

struct FilterEntry {
  absl::string_view name;
  FilterFn fn;
};

constexpr FilterEntry kFilters[] = {
    {"abs", FilterAbs},
    {"attr", FilterAttr},
    {"batch", FilterBatch},
    {"capitalize", FilterCapitalize},
    {"center", FilterCenter},
    {"count", FilterLength},
    {"d", FilterDefault},
    {"default", FilterDefault},
    {"dictsort", FilterDictsort},
    {"e", FilterEscape},
    {"escape", FilterEscape},
    {"first", FilterFirst},
    {"float", FilterFloat},
    {"forceescape", FilterForceescape},
    {"format", FilterFormat},
    {"groupby", FilterGroupby},
    {"indent", FilterIndent},
    {"int", FilterInt},
    {"items", FilterItems},
    {"join", FilterJoin},
    {"last", FilterLast},
    {"length", FilterLength},
    {"list", FilterList},
    {"lower", FilterLower},
    {"map", FilterMap},
    {"max", FilterMax},
    {"min", FilterMin},
    {"reject", FilterReject},
    {"rejectattr", FilterRejectattr},
    {"replace", FilterReplace},
    {"reverse", FilterReverse},
    {"round", FilterRound},
    {"safe", FilterSafe},
    {"select", FilterSelect},
    {"selectattr", FilterSelectattr},
    {"slice", FilterSlice},
    {"sort", FilterSort},
    {"string", FilterString},
    {"sum", FilterSum},
    {"title", FilterTitle},
    {"tojson", FilterToJson},
    {"trim", FilterTrim},
    {"truncate", FilterTruncate},
    {"unique", FilterUnique},
    {"upper", FilterUpper},
    {"wordcount", FilterWordcount},
};

constexpr absl::string_view kOtherJinjaFilters[] = {
    "filesizeformat", "pprint", "random", "striptags", "urlencode", "urlize", "wordwrap", "xmlattr",
};

}  // namespace

FilterFn FindFilter(absl::string_view name) {
  for (const FilterEntry& e : kFilters) {
    if (e.name == name) return e.fn;
  }
  return nullptr;
}

bool IsKnownJinjaFilter(absl::string_view name) {
  return std::find(std::begin(kOtherJinjaFilters), std::end(kOtherJinjaFilters), name) !=
         std::end(kOtherJinjaFilters);
}

}  // namespace kiln::models::jinja
