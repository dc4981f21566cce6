// Python's str methods, by code point.
#include "models/chat/jinja_str_methods.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "models/chat/jinja_args.h"
#include "models/chat/jinja_builtins.h"
#include "models/chat/jinja_format.h"
#include "models/chat/jinja_unicode.h"

namespace kiln::models::jinja {
namespace {

using U32 = std::u32string;

absl::Status ValueError(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

Value Text(const Value& self, std::string s) {
  return self.markup() ? Value::Markup(std::move(s)) : Value::String(std::move(s));
}

Value Text(const Value& self, const U32& s) { return Text(self, Encode(s)); }

// An argument that is a str, or (for `chars`-like ones) None.
absl::StatusOr<std::optional<std::string>> OptionalStr(const ArgBinder& a, size_t i,
                                                       absl::string_view what) {
  if (!a.has(i) || a[i].is_none()) return std::optional<std::string>();
  absl::StatusOr<std::string> s = StrArg(a[i], what);
  if (!s.ok()) return s.status();
  return std::optional<std::string>(*std::move(s));
}

// Python's start/end arguments (slice-style, clamped) over `length`.
absl::StatusOr<std::pair<size_t, size_t>> Range(const ArgBinder& a, size_t first, size_t length,
                                                absl::string_view what) {
  const auto n = static_cast<int64_t>(length);
  int64_t bounds[2] = {0, n};
  for (size_t k = 0; k < 2; ++k) {
    if (!a.has(first + k) || a[first + k].is_none()) continue;
    absl::StatusOr<int64_t> v = IntArg(a[first + k], what);
    if (!v.ok()) return v.status();
    int64_t i = *v;
    if (i < 0) i = std::max<int64_t>(0, i + n);
    bounds[k] = std::min(i, n);
  }
  return std::make_pair(static_cast<size_t>(bounds[0]), static_cast<size_t>(bounds[1]));
}

size_t Find(const U32& hay, const U32& needle, size_t begin, size_t end, bool reverse) {
  if (end < begin || needle.size() > end - begin) return U32::npos;
  if (reverse) {
    for (size_t i = end - needle.size() + 1; i-- > begin;) {
      if (hay.compare(i, needle.size(), needle) == 0) return i;
    }
    return U32::npos;
  }
  for (size_t i = begin; i + needle.size() <= end; ++i) {
    if (hay.compare(i, needle.size(), needle) == 0) return i;
  }
  return U32::npos;
}

std::vector<U32> SplitWhitespace(const U32& s, int64_t maxsplit, bool from_right) {
  std::vector<U32> parts;
  if (!from_right) {
    size_t i = 0;
    while (true) {
      while (i < s.size() && IsSpace(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
        size_t end = s.size();
        parts.push_back(s.substr(i, end - i));
        break;
      }
      size_t j = i;
      while (j < s.size() && !IsSpace(s[j])) ++j;
      parts.push_back(s.substr(i, j - i));
      i = j;
    }
    return parts;
  }
  size_t end = s.size();
  while (true) {
    while (end > 0 && IsSpace(s[end - 1])) --end;
    if (end == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      parts.push_back(s.substr(0, end));
      break;
    }
    size_t j = end;
    while (j > 0 && !IsSpace(s[j - 1])) --j;
    parts.push_back(s.substr(j, end - j));
    end = j;
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::vector<U32> SplitSep(const U32& s, const U32& sep, int64_t maxsplit, bool from_right) {
  std::vector<U32> parts;
  if (!from_right) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      const size_t at = s.find(sep, start);
      if (at == U32::npos) break;
      parts.push_back(s.substr(start, at - start));
      start = at + sep.size();
    }
    parts.push_back(s.substr(start));
    return parts;
  }
  size_t end = s.size();
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    if (end < sep.size()) break;
    const size_t at = s.rfind(sep, end - sep.size());
    if (at == U32::npos) break;
    parts.push_back(s.substr(at + sep.size(), end - at - sep.size()));
    end = at;
  }
  parts.push_back(s.substr(0, end));
  std::reverse(parts.begin(), parts.end());
  return parts;
}

absl::StatusOr<Value> Split(CallContext& ctx, const Value& self, CallArgs& args, bool from_right) {
  ArgBinder a(from_right ? "str.rsplit()" : "str.split()", args, {"sep", "maxsplit"});
  if (!a.ok()) return a.status();
  absl::StatusOr<std::optional<std::string>> sep = OptionalStr(a, 0, "sep");
  if (!sep.ok()) return sep.status();
  int64_t maxsplit = -1;
  if (a.has(1)) {
    absl::StatusOr<int64_t> m = IntArg(a[1], "maxsplit");
    if (!m.ok()) return m.status();
    maxsplit = *m;
  }
  const U32 s = Decode(self.str());
  if (absl::Status st = ctx.Charge(s.size()); !st.ok()) return st;
  std::vector<U32> parts;
  if (sep->has_value()) {
    const U32 sep32 = Decode(**sep);
    if (sep32.empty()) return ValueError("empty separator");
    parts = SplitSep(s, sep32, maxsplit, from_right);
  } else {
    parts = SplitWhitespace(s, maxsplit, from_right);
  }
  std::vector<Value> out;
  for (const U32& p : parts) out.push_back(Text(self, p));
  return Value::List(std::move(out));
}

bool IsLineBreak(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
         c == 0x85 || c == 0x2028 || c == 0x2029;
}

absl::StatusOr<Value> SplitLines(const Value& self, CallArgs& args) {
  ArgBinder a("str.splitlines()", args, {"keepends"});
  if (!a.ok()) return a.status();
  const bool keep = a.has(0) && Truthy(a[0]);
  const U32 s = Decode(self.str());
  std::vector<Value> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size() && !IsLineBreak(s[j])) ++j;
    size_t eol = j;
    if (j < s.size()) {
      eol = (s[j] == '\r' && j + 1 < s.size() && s[j + 1] == '\n') ? j + 2 : j + 1;
    }
    out.push_back(Text(self, s.substr(i, (keep ? eol : j) - i)));
    i = eol;
  }
  return Value::List(std::move(out));
}

absl::StatusOr<Value> StripMethod(const Value& self, CallArgs& args, bool left, bool right,
                                  absl::string_view what) {
  ArgBinder a(what, args, {"chars"});
  if (!a.ok()) return a.status();
  absl::StatusOr<std::optional<std::string>> chars = OptionalStr(a, 0, "chars");
  if (!chars.ok()) return chars.status();
  return Text(self, Strip(self.str(), chars->has_value() ? &**chars : nullptr, left, right));
}

// startswith / endswith: a str or a tuple of them, with start/end.
absl::StatusOr<Value> AffixTest(const Value& self, CallArgs& args, bool ends) {
  ArgBinder a(ends ? "str.endswith()" : "str.startswith()", args, {"prefix", "start", "end"});
  if (!a.ok()) return a.status();
  if (absl::Status s = a.Require(1); !s.ok()) return s;
  const U32 s = Decode(self.str());
  absl::StatusOr<std::pair<size_t, size_t>> range = Range(a, 1, s.size(), "slice indices");
  if (!range.ok()) return range.status();
  std::vector<Value> candidates;
  if (a[0].is_list() && a[0].seq_kind() == SeqKind::kTuple) {
    candidates = a[0].items();
  } else if (a[0].is_string()) {
    candidates.push_back(a[0]);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        ends ? "endswith" : "startswith", " first arg must be str or a tuple of str, not ",
        TypeName(a[0])));
  }
  const auto [begin, end] = *range;
  for (const Value& c : candidates) {
    if (!c.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tuple for ", ends ? "endswith" : "startswith", " must only contain str, not ", TypeName(c)));
    }
    const U32 affix = Decode(c.str());
    if (begin > end || affix.size() > end - begin) continue;
    const size_t at = ends ? end - affix.size() : begin;
    if (s.compare(at, affix.size(), affix) == 0) return Value::Bool(true);
  }
  return Value::Bool(false);
}

absl::StatusOr<Value> FindMethod(const Value& self, CallArgs& args, absl::string_view name) {
  ArgBinder a(absl::StrCat("str.", name, "()"), args, {"sub", "start", "end"});
  if (!a.ok()) return a.status();
  if (absl::Status s = a.Require(1); !s.ok()) return s;
  absl::StatusOr<std::string> sub = StrArg(a[0], "must be str");
  if (!sub.ok()) return sub.status();
  const U32 s = Decode(self.str());
  const U32 needle = Decode(*sub);
  absl::StatusOr<std::pair<size_t, size_t>> range = Range(a, 1, s.size(), "slice indices");
  if (!range.ok()) return range.status();
  const auto [begin, end] = *range;
  if (name == "count") {
    if (begin > end) return Value::Int(0);
    if (needle.empty()) return Value::Int(static_cast<int64_t>(end - begin + 1));
    int64_t n = 0;
    for (size_t i = begin; i + needle.size() <= end;) {
      if (s.compare(i, needle.size(), needle) == 0) {
        ++n;
        i += needle.size();
      } else {
        ++i;
      }
    }
    return Value::Int(n);
  }
  const bool reverse = name == "rfind" || name == "rindex";
  const size_t at = Find(s, needle, begin, end, reverse);
  if (at == U32::npos) {
    if (name == "index" || name == "rindex") return ValueError("substring not found");
    return Value::Int(-1);
  }
  return Value::Int(static_cast<int64_t>(at));
}

absl::StatusOr<Value> Replace(CallContext& ctx, const Value& self, CallArgs& args) {
  ArgBinder a("str.replace()", args, {"old", "new", "count"});
  if (!a.ok()) return a.status();
  if (absl::Status s = a.Require(2); !s.ok()) return s;
  absl::StatusOr<std::string> old_s = StrArg(a[0], "replace() argument 1");
  if (!old_s.ok()) return old_s.status();
  absl::StatusOr<std::string> new_s = StrArg(a[1], "replace() argument 2");
  if (!new_s.ok()) return new_s.status();
  int64_t count = -1;
  if (a.has(2)) {
    absl::StatusOr<int64_t> c = IntArg(a[2], "count");
    if (!c.ok()) return c.status();
    count = *c;
  }
  std::string replacement = *new_s;
  if (self.markup() && !a[1].markup()) replacement = HtmlEscape(replacement);
  const std::string& s = self.str();
  std::string out;
  if (old_s->empty()) {
    // Python inserts the replacement before every character and at the end.
    int64_t done = 0;
    size_t pos = 0;
    while (true) {
      if (count < 0 || done < count) {
        out += replacement;
        ++done;
      }
      if (pos >= s.size()) break;
      const size_t start = pos;
      NextCodePoint(s, &pos);
      out.append(s, start, pos - start);
      if (absl::Status st = ctx.CheckSize(out.size()); !st.ok()) return st;
    }
    return Text(self, std::move(out));
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t at = s.find(*old_s, start);
    if (at == std::string::npos) break;
    out.append(s, start, at - start);
    out += replacement;
    start = at + old_s->size();
    ++done;
    if (absl::Status st = ctx.CheckSize(out.size()); !st.ok()) return st;
  }
  out.append(s, start, std::string::npos);
  return Text(self, std::move(out));
}

absl::StatusOr<Value> Justify(CallContext& ctx, const Value& self, CallArgs& args, absl::string_view name) {
  ArgBinder a(absl::StrCat("str.", name, "()"), args, {"width", "fillchar"});
  if (!a.ok()) return a.status();
  if (absl::Status s = a.Require(1); !s.ok()) return s;
  absl::StatusOr<int64_t> width = IntArg(a[0], "width");
  if (!width.ok()) return width.status();
  char32_t fill = ' ';
  if (a.has(1)) {
    if (!a[1].is_string() || CodePointCount(a[1].str()) != 1) {
      return absl::InvalidArgumentError("The fill character must be exactly one character long");
    }
    fill = Decode(a[1].str())[0];
  }
  const U32 s = Decode(self.str());
  if (*width <= static_cast<int64_t>(s.size())) return self;
  if (absl::Status st = ctx.CheckSize(static_cast<size_t>(*width)); !st.ok()) return st;
  const size_t pad = static_cast<size_t>(*width) - s.size();
  size_t left = 0;
  if (name == "rjust") {
    left = pad;
  } else if (name == "center") {
    left = pad / 2 + (pad & static_cast<size_t>(*width) & 1);
  } else if (name == "zfill") {
    left = pad;
    fill = '0';
  }
  U32 out;
  size_t body = 0;
  if (name == "zfill" && !s.empty() && (s[0] == '+' || s[0] == '-')) {
    out.push_back(s[0]);
    body = 1;
  }
  out.append(left, fill);
  out.append(s, body);
  out.append(pad - left, fill);
  return Text(self, out);
}

absl::StatusOr<Value> Join(CallContext& ctx, const Value& self, CallArgs& args) {
  ArgBinder a("str.join()", args, {"iterable"});
  if (!a.ok()) return a.status();
  if (absl::Status s = a.Require(1); !s.ok()) return s;
  absl::StatusOr<std::vector<Value>> items = Iterate(a[0]);
  if (!items.ok()) return items.status();
  std::string out;
  for (size_t i = 0; i < items->size(); ++i) {
    const Value& item = (*items)[i];
    if (!item.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat("sequence item ", i, ": expected str instance, ",
                                                     TypeName(item), " found"));
    }
    if (i > 0) out += self.str();
    out += (self.markup() && !item.markup()) ? HtmlEscape(item.str()) : item.str();
    if (absl::Status s = ctx.CheckSize(out.size()); !s.ok()) return s;
  }
  return Text(self, std::move(out));
}

absl::StatusOr<Value> Partition(const Value& self, CallArgs& args, bool from_right) {
  ArgBinder a(from_right ? "str.rpartition()" : "str.partition()", args, {"sep"});
  if (!a.ok()) return a.status();
  if (absl::Status s = a.Require(1); !s.ok()) return s;
  absl::StatusOr<std::string> sep = StrArg(a[0], "must be str");
  if (!sep.ok()) return sep.status();
  if (sep->empty()) return ValueError("empty separator");
  const std::string& s = self.str();
  const size_t at = from_right ? s.rfind(*sep) : s.find(*sep);
  if (at == std::string::npos) {
    return from_right ? Value::Tuple({Text(self, ""), Text(self, ""), self})
                      : Value::Tuple({self, Text(self, ""), Text(self, "")});
  }
  return Value::Tuple({Text(self, s.substr(0, at)), Text(self, *sep),
                       Text(self, s.substr(at + sep->size()))});
}

template <typename Pred>
Value AllChars(const Value& self, Pred pred) {
  const U32 s = Decode(self.str());
  return Value::Bool(!s.empty() && std::all_of(s.begin(), s.end(), pred));
}

// islower / isupper: every cased character has that case, and one exists.
Value CaseTest(const Value& self, bool upper) {
  bool cased = false;
  for (char32_t c : Decode(self.str())) {
    if (upper ? IsLower(c) : IsUpper(c)) return Value::Bool(false);
    if (upper ? IsUpper(c) : IsLower(c)) cased = true;
  }
  return Value::Bool(cased);
}

Value IsTitle(const Value& self) {
  bool cased = false, previous_cased = false;
  for (char32_t c : Decode(self.str())) {
    if (IsUpper(c)) {
      if (previous_cased) return Value::Bool(false);
      previous_cased = cased = true;
    } else if (IsLower(c)) {
      if (!previous_cased) return Value::Bool(false);
      previous_cased = cased = true;
    } else {
      previous_cased = false;
    }
  }
  return Value::Bool(cased);
}

absl::StatusOr<Value> Affix(const Value& self, CallArgs& args, bool prefix) {
  ArgBinder a(prefix ? "str.removeprefix()" : "str.removesuffix()", args, {"affix"});
  if (!a.ok()) return a.status();
  if (absl::Status s = a.Require(1); !s.ok()) return s;
  absl::StatusOr<std::string> affix = StrArg(a[0], "argument");
  if (!affix.ok()) return affix.status();
  const std::string& s = self.str();
  if (prefix && s.compare(0, affix->size(), *affix) == 0) return Text(self, s.substr(affix->size()));
  if (!prefix && s.size() >= affix->size() &&
      s.compare(s.size() - affix->size(), affix->size(), *affix) == 0) {
    return Text(self, s.substr(0, s.size() - affix->size()));
  }
  return self;
}

constexpr absl::string_view kStrMethods[] = {
    "capitalize", "casefold",   "center",       "count",      "encode",      "endswith",
    "expandtabs", "find",       "format",       "format_map", "index",       "isalnum",
    "isalpha",    "isascii",    "isdecimal",    "isdigit",    "isidentifier", "islower",
    "isnumeric",  "isprintable", "isspace",     "istitle",    "isupper",     "join",
    "ljust",      "lower",      "lstrip",       "maketrans",  "partition",   "removeprefix",
    "removesuffix", "replace",  "rfind",        "rindex",     "rjust",       "rpartition",
    "rsplit",     "rstrip",     "split",        "splitlines", "startswith",  "strip",
    "swapcase",   "title",      "translate",    "upper",      "zfill",
};

}  // namespace

bool IsStrMethod(absl::string_view name) {
  return std::find(std::begin(kStrMethods), std::end(kStrMethods), name) != std::end(kStrMethods);
}

absl::StatusOr<Value> CallStrMethod(CallContext& ctx, const Value& self, absl::string_view name,
                                    CallArgs& args) {
  const std::string what = absl::StrCat("str.", name, "()");
  if (absl::Status s = ctx.Charge(self.str().size() / 16); !s.ok()) return s;
  if (name == "split") return Split(ctx, self, args, false);
  if (name == "rsplit") return Split(ctx, self, args, true);
  if (name == "splitlines") return SplitLines(self, args);
  if (name == "strip") return StripMethod(self, args, true, true, what);
  if (name == "lstrip") return StripMethod(self, args, true, false, what);
  if (name == "rstrip") return StripMethod(self, args, false, true, what);
  if (name == "startswith") return AffixTest(self, args, false);
  if (name == "endswith") return AffixTest(self, args, true);
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    return FindMethod(self, args, name);
  }
  if (name == "replace") return Replace(ctx, self, args);
  if (name == "center" || name == "ljust" || name == "rjust" || name == "zfill") {
    return Justify(ctx, self, args, name);
  }
  if (name == "join") return Join(ctx, self, args);
  if (name == "partition") return Partition(self, args, false);
  if (name == "rpartition") return Partition(self, args, true);
  if (name == "removeprefix") return Affix(self, args, true);
  if (name == "removesuffix") return Affix(self, args, false);
  if (name == "format") return BraceFormat(ctx, self, args);
  if (absl::Status s = NoArgs(args, what); !s.ok()) return s;
  if (name == "upper") return Text(self, Upper(self.str()));
  if (name == "lower" || name == "casefold") return Text(self, Lower(self.str()));
  if (name == "title") return Text(self, PyTitle(self.str()));
  if (name == "capitalize") return Text(self, Capitalize(self.str()));
  if (name == "swapcase") return Text(self, SwapCase(self.str()));
  if (name == "isspace") return AllChars(self, IsSpace);
  if (name == "isalpha") return AllChars(self, IsAlpha);
  if (name == "isalnum") return AllChars(self, IsAlnum);
  if (name == "isdigit" || name == "isdecimal") return AllChars(self, IsDecimal);
  if (name == "isnumeric") return AllChars(self, IsNumeric);
  if (name == "isascii") return Value::Bool(IsAscii(self.str()));
  if (name == "isprintable") {
    const U32 s = Decode(self.str());
    return Value::Bool(std::all_of(s.begin(), s.end(), IsPrintable));
  }
  if (name == "isidentifier") {
    const U32 s = Decode(self.str());
    return Value::Bool(!s.empty() && !IsDecimal(s[0]) &&
                       std::all_of(s.begin(), s.end(), [](char32_t c) { return IsWordChar(c); }));
  }
  if (name == "islower") return CaseTest(self, false);
  if (name == "isupper") return CaseTest(self, true);
  if (name == "istitle") return IsTitle(self);
  return absl::UnimplementedError(absl::StrCat("string method '", name, "' is not supported"));
}

}  // namespace kiln::models::jinja
