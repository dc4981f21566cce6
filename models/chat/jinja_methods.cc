// Methods of dicts and lists, bound methods, and the dispatch to str's.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "models/chat/jinja_args.h"
#include "models/chat/jinja_builtins.h"
#include "models/chat/jinja_str_methods.h"

namespace kiln::models::jinja {
namespace {

constexpr absl::string_view kDictMethods[] = {"copy", "fromkeys", "get", "items", "keys", "values"};
constexpr absl::string_view kDictMutators[] = {"clear", "pop", "popitem", "setdefault", "update"};
constexpr absl::string_view kListMutators[] = {"append", "clear",   "extend", "insert",
                                              "pop",    "remove", "reverse", "sort"};

template <size_t N>
bool In(const absl::string_view (&names)[N], absl::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

class BoundMethodValue final : public Callable {
 public:
  BoundMethodValue(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}

  std::string Repr() const override {
    return absl::StrCat("<built-in method ", name_, " of ", TypeName(self_), " object>");
  }
  std::string TypeName() const override { return "builtin_function_or_method"; }
  absl::StatusOr<Value> Call(CallContext& ctx, CallArgs args) const override {
    return CallMethod(ctx, self_, name_, std::move(args));
  }

 private:
  static std::string TypeName(const Value& v) { return jinja::TypeName(v); }
  Value self_;
  std::string name_;
};

absl::StatusOr<Value> CallDictMethod(CallContext& ctx, const Value& self, absl::string_view name,
                                     CallArgs& args) {
  const Dict& dict = self.dict();
  const std::string what = absl::StrCat("dict.", name, "()");
  if (name == "get") {
    ArgBinder a(what, args, {"key", "default"});
    if (!a.ok()) return a.status();
    if (absl::Status s = a.Require(1); !s.ok()) return s;
    if (absl::Status s = CheckHashable(a[0]); !s.ok()) return s;
    if (const Value* v = dict.Find(a[0])) return *v;
    return a.get(1, Value::None());
  }
  if (absl::Status s = ctx.Charge(dict.size()); !s.ok()) return s;
  if (name == "fromkeys") {
    return absl::UnimplementedError("dict method 'fromkeys' is not supported");
  }
  if (absl::Status s = NoArgs(args, what); !s.ok()) return s;
  if (name == "copy") return Value::FromDict(dict);
  std::vector<Value> out;
  out.reserve(dict.size());
  for (const auto& [k, v] : dict.entries()) {
    if (name == "keys") {
      out.push_back(k);
    } else if (name == "values") {
      out.push_back(v);
    } else {
      out.push_back(Value::Tuple({k, v}));
    }
  }
  const SeqKind kind = name == "keys"     ? SeqKind::kDictKeys
                       : name == "values" ? SeqKind::kDictValues
                                          : SeqKind::kDictItems;
  return Value::List(std::move(out), kind);
}

absl::StatusOr<Value> CallListMethod(CallContext& ctx, const Value& self, absl::string_view name,
                                     CallArgs& args) {
  const std::vector<Value>& items = self.items();
  const std::string what = absl::StrCat(TypeName(self), ".", name, "()");
  if (absl::Status s = ctx.Charge(items.size()); !s.ok()) return s;
  if (name == "copy") {
    if (absl::Status s = NoArgs(args, what); !s.ok()) return s;
    return Value::List(items);
  }
  if (name == "count") {
    ArgBinder a(what, args, {"value"});
    if (!a.ok()) return a.status();
    if (absl::Status s = a.Require(1); !s.ok()) return s;
    return Value::Int(std::count_if(items.begin(), items.end(),
                                    [&](const Value& v) { return Equals(v, a[0]); }));
  }
  // index(value, start, end)
  ArgBinder a(what, args, {"value", "start", "end"});
  if (!a.ok()) return a.status();
  if (absl::Status s = a.Require(1); !s.ok()) return s;
  const auto n = static_cast<int64_t>(items.size());
  int64_t bounds[2] = {0, n};
  for (size_t k = 0; k < 2; ++k) {
    if (!a.has(k + 1)) continue;
    absl::StatusOr<int64_t> v = IntArg(a[k + 1], what);
    if (!v.ok()) return v.status();
    int64_t i = *v;
    if (i < 0) i = std::max<int64_t>(0, i + n);
    bounds[k] = std::min(i, n);
  }
  for (int64_t i = bounds[0]; i < bounds[1]; ++i) {
    if (Equals(items[static_cast<size_t>(i)], a[0])) return Value::Int(i);
  }
  return absl::InvalidArgumentError(absl::StrCat(Repr(a[0]), " is not in ", TypeName(self)));
}

}  // namespace

bool IsMethod(const Value& obj, absl::string_view name, bool* mutating) {
  *mutating = false;
  switch (obj.kind()) {
    case Kind::kString:
      return IsStrMethod(name);
    case Kind::kDict:
      if (In(kDictMutators, name)) {
        *mutating = true;
        return true;
      }
      return In(kDictMethods, name);
    case Kind::kList:
      if (obj.seq_kind() == SeqKind::kList) {
        if (In(kListMutators, name)) {
          *mutating = true;
          return true;
        }
        return name == "copy" || name == "count" || name == "index";
      }
      if (obj.seq_kind() == SeqKind::kTuple) return name == "count" || name == "index";
      return false;
    default:
      return false;
  }
}

Value BoundMethod(const Value& obj, absl::string_view name) {
  return Value::FromCallable(std::make_shared<BoundMethodValue>(obj, std::string(name)));
}

absl::StatusOr<Value> CallMethod(CallContext& ctx, const Value& self, absl::string_view name,
                                 CallArgs args) {
  switch (self.kind()) {
    case Kind::kString:
      return CallStrMethod(ctx, self, name, args);
    case Kind::kDict:
      return CallDictMethod(ctx, self, name, args);
    case Kind::kList:
      return CallListMethod(ctx, self, name, args);
    case Kind::kObject:
      return self.object().CallMethod(name, ctx, std::move(args));
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("'", TypeName(self), "' object has no method '", name, "'"));
  }
}

}  // namespace kiln::models::jinja
