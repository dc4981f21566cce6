// Python's operators on template values, jinja2's sandboxed lookups,
// iteration and slicing.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "models/chat/jinja_builtins.h"
#include "models/chat/jinja_format.h"
#include "models/chat/jinja_unicode.h"

namespace kiln::models::jinja {
namespace {

absl::Status TypeError(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

absl::Status UnsupportedOperands(absl::string_view op, const Value& a, const Value& b) {
  return TypeError(absl::StrCat("unsupported operand type(s) for ", op, ": '", TypeName(a),
                                "' and '", TypeName(b), "'"));
}

absl::Status Overflow() { return absl::InvalidArgumentError("integer overflow (kiln's ints are 64-bit)"); }

// jinja2's object_type_repr, for messages about missing attributes.
std::string ObjectTypeRepr(const Value& v) {
  if (v.is_none()) return "None";
  if (v.is_string() && v.markup()) return "markupsafe.Markup object";
  if (v.is_namespace()) return "jinja2.utils.Namespace object";
  if (v.is_undefined()) return "jinja2.runtime.Undefined object";
  return absl::StrCat(TypeName(v), " object");
}

absl::StatusOr<Value> Concatenate(CallContext& ctx, const Value& a, const Value& b) {
  if (a.is_string() && b.is_string()) {
    if (a.markup() || b.markup()) {
      std::string left = a.markup() ? a.str() : HtmlEscape(a.str());
      std::string right = b.markup() ? b.str() : HtmlEscape(b.str());
      if (absl::Status s = ctx.CheckSize(left.size() + right.size()); !s.ok()) return s;
      return Value::Markup(left + right);
    }
    if (absl::Status s = ctx.CheckSize(a.str().size() + b.str().size()); !s.ok()) return s;
    return Value::String(a.str() + b.str());
  }
  if (a.is_list() && b.is_list() && a.seq_kind() == b.seq_kind() &&
      (a.seq_kind() == SeqKind::kList || a.seq_kind() == SeqKind::kTuple)) {
    if (absl::Status s = ctx.CheckSize((a.items().size() + b.items().size()) * sizeof(Value)); !s.ok())
      return s;
    std::vector<Value> items = a.items();
    items.insert(items.end(), b.items().begin(), b.items().end());
    Value out = Value::List(std::move(items), a.seq_kind());
    if (out.depth() > kMaxValueDepth) return absl::ResourceExhaustedError("list nests too deeply");
    return out;
  }
  if (a.is_string() || (a.is_list() && a.seq_kind() == SeqKind::kList)) {
    return TypeError(absl::StrCat("can only concatenate ", TypeName(a), " (not \"", TypeName(b),
                                  "\") to ", TypeName(a)));
  }
  return UnsupportedOperands("+", a, b);
}

absl::StatusOr<Value> Repeat(CallContext& ctx, const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    const size_t size = seq.str().size();
    if (size != 0 && static_cast<uint64_t>(n) > (uint64_t{1} << 40) / size) {
      return absl::ResourceExhaustedError("string repetition is too large");
    }
    if (absl::Status s = ctx.CheckSize(size * static_cast<size_t>(n)); !s.ok()) return s;
    std::string out;
    out.reserve(size * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += seq.str();
    return seq.markup() ? Value::Markup(std::move(out)) : Value::String(std::move(out));
  }
  const auto& items = seq.items();
  if (!items.empty() && static_cast<uint64_t>(n) > (uint64_t{1} << 40) / items.size()) {
    return absl::ResourceExhaustedError("list repetition is too large");
  }
  if (absl::Status s = ctx.CheckSize(items.size() * static_cast<size_t>(n) * sizeof(Value)); !s.ok())
    return s;
  std::vector<Value> out;
  out.reserve(items.size() * static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::List(std::move(out), seq.seq_kind());
}

bool IsRepeatable(const Value& v) {
  return v.is_string() ||
         (v.is_list() && (v.seq_kind() == SeqKind::kList || v.seq_kind() == SeqKind::kTuple));
}

// Python's float // and %.
double FloatFloorDiv(double x, double y) {
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0 && ((y < 0) != (mod < 0))) div -= 1.0;
  if (div == 0) return std::copysign(0.0, x / y);
  double floordiv = std::floor(div);
  if (div - floordiv > 0.5) floordiv += 1.0;
  return floordiv;
}

double FloatMod(double x, double y) {
  double mod = std::fmod(x, y);
  if (mod != 0) {
    if ((y < 0) != (mod < 0)) mod += y;
  } else {
    mod = std::copysign(0.0, y);
  }
  return mod;
}

absl::StatusOr<Value> IntPow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, base, &result)) return Overflow();
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) return Overflow();
  }
  return Value::Int(result);
}

absl::StatusOr<Value> Arithmetic(BinaryOp op, const Value& a, const Value& b) {
  const bool ints = a.is_integral() && b.is_integral();
  const double x = a.number_value(), y = b.number_value();
  const int64_t i = a.int_value(), j = b.int_value();
  int64_t r = 0;
  switch (op) {
    case BinaryOp::kAdd:
      if (!ints) return Value::Float(x + y);
      if (__builtin_add_overflow(i, j, &r)) return Overflow();
      return Value::Int(r);
    case BinaryOp::kSub:
      if (!ints) return Value::Float(x - y);
      if (__builtin_sub_overflow(i, j, &r)) return Overflow();
      return Value::Int(r);
    case BinaryOp::kMul:
      if (!ints) return Value::Float(x * y);
      if (__builtin_mul_overflow(i, j, &r)) return Overflow();
      return Value::Int(r);
    case BinaryOp::kDiv:
      if (y == 0) return absl::InvalidArgumentError("division by zero");
      return Value::Float(x / y);
    case BinaryOp::kFloorDiv:
      if (ints) {
        if (j == 0) return absl::InvalidArgumentError("integer division or modulo by zero");
        if (i == std::numeric_limits<int64_t>::min() && j == -1) return Overflow();
        int64_t q = i / j;
        if ((i % j != 0) && ((i < 0) != (j < 0))) --q;
        return Value::Int(q);
      }
      if (y == 0) return absl::InvalidArgumentError("float floor division by zero");
      return Value::Float(FloatFloorDiv(x, y));
    case BinaryOp::kMod:
      if (ints) {
        if (j == 0) return absl::InvalidArgumentError("integer division or modulo by zero");
        if (j == -1) return Value::Int(0);
        int64_t m = i % j;
        if (m != 0 && ((m < 0) != (j < 0))) m += j;
        return Value::Int(m);
      }
      if (y == 0) return absl::InvalidArgumentError("float modulo");
      return Value::Float(FloatMod(x, y));
    case BinaryOp::kPow:
      if (ints && j >= 0) return IntPow(i, j);
      if (x == 0 && y < 0) {
        return absl::InvalidArgumentError("0.0 cannot be raised to a negative power");
      }
      if (x < 0 && y != std::floor(y)) {
        return absl::UnimplementedError("complex numbers are not supported");
      }
      return Value::Float(std::pow(x, y));
  }
  return absl::InternalError("unknown operator");
}

const char* OpSpelling(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSub:
      return "-";
    case BinaryOp::kMul:
      return "*";
    case BinaryOp::kDiv:
      return "/";
    case BinaryOp::kFloorDiv:
      return "//";
    case BinaryOp::kMod:
      return "%";
    case BinaryOp::kPow:
      return "** or pow()";
  }
  return "?";
}

// Python's PySlice_AdjustIndices; returns the selected positions.
absl::StatusOr<std::vector<size_t>> SliceIndices(int64_t length, const Value& start,
                                                 const Value& stop, const Value& step) {
  int64_t st = step.is_none() ? 1 : step.int_value();
  if (st == 0) return absl::InvalidArgumentError("slice step cannot be zero");
  // Steps past the length select the same items, and stay clear of overflow.
  st = std::clamp<int64_t>(st, -length - 1, length + 1);
  if (st == 0) st = 1;
  const auto clamp = [&](const Value& v, int64_t fallback) {
    if (v.is_none()) return fallback;
    int64_t i = v.int_value();
    if (i < 0) {
      i = i < -length ? (st < 0 ? -1 : 0) : i + length;
    } else if (i >= length) {
      i = st < 0 ? length - 1 : length;
    }
    return i;
  };
  const int64_t begin = clamp(start, st < 0 ? length - 1 : 0);
  const int64_t end = clamp(stop, st < 0 ? -1 : length);
  std::vector<size_t> out;
  if (st > 0) {
    for (int64_t i = begin; i < end; i += st) out.push_back(static_cast<size_t>(i));
  } else {
    for (int64_t i = begin; i > end; i += st) out.push_back(static_cast<size_t>(i));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<Value>> Iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return std::vector<Value>();
    case Kind::kList: {
      const ListData& data = v.list();
      if (data.kind == SeqKind::kIterator) {
        std::vector<Value> rest(data.items.begin() + static_cast<ptrdiff_t>(data.cursor),
                                data.items.end());
        data.cursor = data.items.size();
        return rest;
      }
      return data.items;
    }
    case Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(v.dict().size());
      for (const auto& [k, value] : v.dict().entries()) keys.push_back(k);
      return keys;
    }
    case Kind::kString: {
      std::vector<Value> chars;
      const std::string& s = v.str();
      for (size_t pos = 0; pos < s.size();) {
        const size_t start = pos;
        NextCodePoint(s, &pos);
        chars.push_back(v.markup() ? Value::Markup(s.substr(start, pos - start))
                                   : Value::String(s.substr(start, pos - start)));
      }
      return chars;
    }
    default:
      return TypeError(absl::StrCat("'", TypeName(v), "' object is not iterable"));
  }
}

absl::StatusOr<bool> Contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kUndefined:
      return false;
    case Kind::kString:
      if (!item.is_string()) {
        return TypeError(absl::StrCat("'in <string>' requires string as left operand, not ",
                                      TypeName(item)));
      }
      return container.str().find(item.str()) != std::string::npos;
    case Kind::kDict:
      if (absl::Status s = CheckHashable(item); !s.ok()) return s;
      return container.dict().Find(item) != nullptr;
    case Kind::kList: {
      absl::StatusOr<std::vector<Value>> items = Iterate(container);
      if (!items.ok()) return items.status();
      for (const Value& x : *items) {
        if (Equals(x, item)) return true;
      }
      return false;
    }
    default:
      return TypeError(absl::StrCat("argument of type '", TypeName(container), "' is not iterable"));
  }
}

absl::StatusOr<Value> BinaryOperation(CallContext& ctx, BinaryOp op, const Value& a,
                                      const Value& b) {
  if (a.is_undefined()) return absl::InvalidArgumentError(a.undefined_message());
  if (b.is_undefined()) return absl::InvalidArgumentError(b.undefined_message());
  if (a.is_number() && b.is_number()) return Arithmetic(op, a, b);
  if (op == BinaryOp::kAdd) return Concatenate(ctx, a, b);
  if (op == BinaryOp::kMul) {
    if (IsRepeatable(a) && b.is_integral()) return Repeat(ctx, a, b.int_value());
    if (a.is_integral() && IsRepeatable(b)) return Repeat(ctx, b, a.int_value());
  }
  if (op == BinaryOp::kMod && a.is_string()) return PercentFormat(ctx, a, b);
  return UnsupportedOperands(OpSpelling(op), a, b);
}

absl::StatusOr<Value> Negate(const Value& v) {
  if (v.is_float()) return Value::Float(-v.float_value());
  if (v.is_integral()) {
    if (v.int_value() == std::numeric_limits<int64_t>::min()) return Overflow();
    return Value::Int(-v.int_value());
  }
  if (v.is_undefined()) return absl::InvalidArgumentError(v.undefined_message());
  return TypeError(absl::StrCat("bad operand type for unary -: '", TypeName(v), "'"));
}

Value MissingAttribute(const Value& obj, const Value& name) {
  if (name.is_string()) {
    return Value::Undefined(
        absl::StrCat("'", ObjectTypeRepr(obj), "' has no attribute '", name.str(), "'"));
  }
  return Value::Undefined(absl::StrCat(ObjectTypeRepr(obj), " has no element ", Repr(name)));
}

namespace {

// The attribute half of the sandbox's lookups; nullopt when obj has no such
// attribute.
std::optional<Value> AttributeOf(const Value& obj, absl::string_view name) {
  bool mutating = false;
  if (IsMethod(obj, name, &mutating)) {
    if (mutating) {
      return Value::Undefined(absl::StrCat("access to attribute '", name, "' of '", TypeName(obj),
                                           "' object is unsafe."));
    }
    return BoundMethod(obj, name);
  }
  if (obj.is_namespace()) {
    if (const Value* v = obj.ns()->Find(name)) return *v;
    return std::nullopt;
  }
  if (obj.is_list() && obj.list().group && (name == "grouper" || name == "list")) {
    return obj.items()[name == "grouper" ? 0 : 1];
  }
  if (obj.is_object()) {
    Value v = obj.object().GetAttr(name, obj);
    if (!v.is_undefined()) return v;
  }
  return std::nullopt;
}

// The item half; nullopt where Python raises TypeError or LookupError.
std::optional<Value> ItemOf(const Value& obj, const Value& key) {
  if (obj.is_dict()) {
    if (!CheckHashable(key).ok()) return std::nullopt;
    if (const Value* v = obj.dict().Find(key)) return *v;
    return std::nullopt;
  }
  const bool indexable =
      obj.is_string() || (obj.is_list() && (obj.seq_kind() == SeqKind::kList ||
                                            obj.seq_kind() == SeqKind::kTuple));
  if (!indexable || !key.is_integral()) return std::nullopt;
  int64_t i = key.int_value();
  if (obj.is_string()) {
    const std::u32string cps = Decode(obj.str());
    const auto n = static_cast<int64_t>(cps.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return std::nullopt;
    std::string ch;
    AppendCodePoint(cps[static_cast<size_t>(i)], &ch);
    return obj.markup() ? Value::Markup(std::move(ch)) : Value::String(std::move(ch));
  }
  const auto n = static_cast<int64_t>(obj.items().size());
  if (i < 0) i += n;
  if (i < 0 || i >= n) return std::nullopt;
  return obj.items()[static_cast<size_t>(i)];
}

}  // namespace

namespace {

// Python's special attributes (__class__, ...), which every object has and
// the sandbox refuses.
bool IsDunder(absl::string_view name) {
  return name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__";
}

Value Unsafe(const Value& obj, absl::string_view name) {
  return Value::Undefined(absl::StrCat("access to attribute '", name, "' of '", TypeName(obj),
                                       "' object is unsafe."));
}

}  // namespace

Value GetAttr(const Value& obj, absl::string_view name) {
  if (IsDunder(name)) return Unsafe(obj, name);
  if (std::optional<Value> v = AttributeOf(obj, name)) return *std::move(v);
  const Value key = Value::String(std::string(name));
  if (std::optional<Value> v = ItemOf(obj, key)) return *std::move(v);
  return MissingAttribute(obj, key);
}

Value GetItem(const Value& obj, const Value& key) {
  if (std::optional<Value> v = ItemOf(obj, key)) return *std::move(v);
  if (key.is_string()) {
    if (IsDunder(key.str())) return Unsafe(obj, key.str());
    if (std::optional<Value> v = AttributeOf(obj, key.str())) return *std::move(v);
  }
  return MissingAttribute(obj, key);
}

absl::StatusOr<Value> GetSlice(CallContext& ctx, const Value& obj, const Value& start,
                               const Value& stop, const Value& step) {
  for (const Value* part : {&start, &stop, &step}) {
    if (!part->is_none() && !part->is_integral()) return MissingAttribute(obj, Value::String("slice"));
  }
  if (obj.is_string()) {
    const std::u32string cps = Decode(obj.str());
    absl::StatusOr<std::vector<size_t>> idx =
        SliceIndices(static_cast<int64_t>(cps.size()), start, stop, step);
    if (!idx.ok()) return idx.status();
    std::u32string out;
    for (size_t i : *idx) out.push_back(cps[i]);
    if (absl::Status s = ctx.Charge(out.size()); !s.ok()) return s;
    return obj.markup() ? Value::Markup(Encode(out)) : Value::String(Encode(out));
  }
  if (obj.is_list() && (obj.seq_kind() == SeqKind::kList || obj.seq_kind() == SeqKind::kTuple)) {
    const auto& items = obj.items();
    absl::StatusOr<std::vector<size_t>> idx =
        SliceIndices(static_cast<int64_t>(items.size()), start, stop, step);
    if (!idx.ok()) return idx.status();
    if (absl::Status s = ctx.Charge(idx->size()); !s.ok()) return s;
    std::vector<Value> out;
    out.reserve(idx->size());
    for (size_t i : *idx) out.push_back(items[i]);
    return Value::List(std::move(out), obj.seq_kind());
  }
  return MissingAttribute(obj, Value::String("slice"));
}

std::optional<int64_t> Length(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return 0;
    case Kind::kString:
      return static_cast<int64_t>(CodePointCount(v.str()));
    case Kind::kList:
      if (v.seq_kind() == SeqKind::kIterator) return std::nullopt;
      return static_cast<int64_t>(v.items().size());
    case Kind::kDict:
      return static_cast<int64_t>(v.dict().size());
    default:
      return std::nullopt;
  }
}

}  // namespace kiln::models::jinja
