// The globals every template sees: jinja2's range (sandboxed), dict,
// namespace, cycler and joiner, and transformers' raise_exception and
// strftime_now.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "models/chat/jinja_args.h"
#include "models/chat/jinja_builtins.h"
#include "models/chat/jinja_strftime.h"

namespace kiln::models::jinja {
namespace {

using GlobalFn = absl::StatusOr<Value> (*)(CallContext& ctx, CallArgs& args);

class GlobalFunction final : public Callable {
 public:
  GlobalFunction(std::string name, GlobalFn fn) : name_(std::move(name)), fn_(fn) {}
  std::string Repr() const override { return absl::StrCat("<built-in function ", name_, ">"); }
  absl::StatusOr<Value> Call(CallContext& ctx, CallArgs args) const override { return fn_(ctx, args); }

 private:
  std::string name_;
  GlobalFn fn_;
};

absl::StatusOr<Value> Range(CallContext& ctx, CallArgs& args) {
  if (!args.keyword.empty()) return absl::InvalidArgumentError("range() takes no keyword arguments");
  const size_t n = args.positional.size();
  if (n < 1 || n > 3) {
    return absl::InvalidArgumentError(absl::StrCat("range expected 1 to 3 arguments, got ", n));
  }
  int64_t bounds[3] = {0, 0, 1};
  for (size_t i = 0; i < n; ++i) {
    absl::StatusOr<int64_t> v = IntArg(args.positional[i], "range()");
    if (!v.ok()) return v.status();
    bounds[n == 1 ? 1 : i] = *v;
  }
  const auto [start, stop, step] = bounds;
  if (step == 0) return absl::InvalidArgumentError("range() arg 3 must not be zero");
  // The length, computed without overflow.
  __int128 length = 0;
  if (step > 0 && start < stop) length = ((__int128)stop - start + step - 1) / step;
  if (step < 0 && start > stop) length = ((__int128)start - stop - step - 1) / -(__int128)step;
  if (length > ctx.max_range()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "Range too big. The sandbox blocks ranges larger than MAX_RANGE (", ctx.max_range(), ")."));
  }
  if (absl::Status s = ctx.Charge(static_cast<size_t>(length)); !s.ok()) return s;
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(length));
  for (int64_t i = 0; i < static_cast<int64_t>(length); ++i) items.push_back(Value::Int(start + i * step));
  return Value::List(std::move(items));
}

// Python's dict(*args, **kwargs): a mapping or an iterable of pairs, then
// the keyword arguments.
absl::StatusOr<Dict> DictFromArgs(CallContext& ctx, CallArgs& args, absl::string_view what) {
  if (args.positional.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " expected at most 1 argument, got ", args.positional.size()));
  }
  Dict d;
  if (!args.positional.empty()) {
    const Value& source = args.positional[0];
    if (source.is_dict()) {
      d = source.dict();
    } else {
      absl::StatusOr<std::vector<Value>> items = Iterate(source);
      if (!items.ok()) return items.status();
      if (absl::Status s = ctx.Charge(items->size()); !s.ok()) return s;
      for (size_t i = 0; i < items->size(); ++i) {
        absl::StatusOr<std::vector<Value>> pair = Iterate((*items)[i]);
        if (!pair.ok() || pair->size() != 2) {
          return absl::InvalidArgumentError(absl::StrCat(
              "dictionary update sequence element #", i, " has length ",
              pair.ok() ? pair->size() : 0, "; 2 is required"));
        }
        if (absl::Status s = CheckHashable((*pair)[0]); !s.ok()) return s;
        d.Set((*pair)[0], (*pair)[1]);
      }
    }
  }
  for (auto& [k, v] : args.keyword) d.Set(Value::String(k), v);
  return d;
}

absl::StatusOr<Value> MakeDict(CallContext& ctx, CallArgs& args) {
  absl::StatusOr<Dict> d = DictFromArgs(ctx, args, "dict");
  if (!d.ok()) return d.status();
  Value v = Value::FromDict(*std::move(d));
  if (v.depth() > kMaxValueDepth) return absl::ResourceExhaustedError("dict nests too deeply");
  return v;
}

absl::StatusOr<Value> MakeNamespace(CallContext& ctx, CallArgs& args) {
  absl::StatusOr<Dict> d = DictFromArgs(ctx, args, "namespace");
  if (!d.ok()) return d.status();
  Namespace* ns = ctx.NewNamespace();
  for (const auto& [k, v] : d->entries()) {
    if (!k.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat("namespace attribute names must be str, not ", TypeName(k)));
    }
    ns->Set(k.str(), v);
  }
  return Value::FromNamespace(ns);
}

class Cycler final : public Object {
 public:
  explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
  std::string TypeName() const override { return "Cycler"; }
  std::string Repr() const override { return "<jinja2.utils.Cycler object>"; }
  Value GetAttr(absl::string_view name, const Value& self) const override {
    if (name == "current") return items_[pos_];
    if (name == "next" || name == "reset") return BoundMethod(self, name);
    if (name == "items") return Value::List(items_);
    return Value::Undefined(absl::StrCat("'jinja2.utils.Cycler object' has no attribute '", name, "'"));
  }
  absl::StatusOr<Value> CallMethod(absl::string_view name, CallContext&, CallArgs args) override {
    if (absl::Status s = NoArgs(args, absl::StrCat("cycler.", name, "()")); !s.ok()) return s;
    if (name == "reset") {
      pos_ = 0;
      return Value::None();
    }
    if (name != "next") return absl::InvalidArgumentError(absl::StrCat("cycler has no method '", name, "'"));
    Value rv = items_[pos_];
    pos_ = (pos_ + 1) % items_.size();
    return rv;
  }

 private:
  std::vector<Value> items_;
  size_t pos_ = 0;
};

absl::StatusOr<Value> MakeCycler(CallContext&, CallArgs& args) {
  if (!args.keyword.empty()) return absl::InvalidArgumentError("cycler() takes no keyword arguments");
  if (args.positional.empty()) return absl::InvalidArgumentError("at least one item has to be provided");
  return Value::FromObject(std::make_shared<Cycler>(args.positional));
}

class Joiner final : public Callable {
 public:
  explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
  std::string Repr() const override { return "<jinja2.utils.Joiner object>"; }
  std::string TypeName() const override { return "Joiner"; }
  absl::StatusOr<Value> Call(CallContext&, CallArgs args) const override {
    if (absl::Status s = NoArgs(args, "joiner()"); !s.ok()) return s;
    if (!used_) {
      used_ = true;
      return Value::String("");
    }
    return Value::String(sep_);
  }

 private:
  std::string sep_;
  mutable bool used_ = false;
};

absl::StatusOr<Value> MakeJoiner(CallContext&, CallArgs& args) {
  ArgBinder a("joiner()", args, {"sep"});
  if (!a.ok()) return a.status();
  return Value::FromCallable(std::make_shared<Joiner>(Str(a.get(0, Value::String(", ")))));
}

absl::StatusOr<Value> RaiseException(CallContext&, CallArgs& args) {
  ArgBinder a("raise_exception()", args, {"message"});
  if (!a.ok()) return a.status();
  if (absl::Status s = a.Require(1); !s.ok()) return s;
  return absl::FailedPreconditionError(Str(a[0]));
}

absl::StatusOr<Value> StrftimeNow(CallContext& ctx, CallArgs& args) {
  ArgBinder a("strftime_now()", args, {"format"});
  if (!a.ok()) return a.status();
  if (absl::Status s = a.Require(1); !s.ok()) return s;
  if (!a[0].is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat("strftime() argument 1 must be str, not ", TypeName(a[0])));
  }
  if (absl::Status s = ctx.CheckSize(a[0].str().size() * 16); !s.ok()) return s;
  return Value::String(PyStrftime(a[0].str(), ctx.Now(), ctx.time_zone()));
}

absl::StatusOr<Value> Lipsum(CallContext&, CallArgs&) {
  return absl::UnimplementedError("global 'lipsum' is not supported");
}

}  // namespace

std::optional<Value> FindGlobal(absl::string_view name) {
  static const auto* const globals = [] {
    auto* table = new std::vector<std::pair<std::string, Value>>;
    const std::pair<const char*, GlobalFn> fns[] = {
        {"range", Range},         {"dict", MakeDict},
        {"namespace", MakeNamespace}, {"cycler", MakeCycler},
        {"joiner", MakeJoiner},   {"raise_exception", RaiseException},
        {"strftime_now", StrftimeNow}, {"lipsum", Lipsum},
    };
    for (const auto& [n, fn] : fns) {
      table->emplace_back(n, Value::FromCallable(std::make_shared<GlobalFunction>(n, fn)));
    }
    return table;
  }();
  for (const auto& [n, v] : *globals) {
    if (n == name) return v;
  }
  return std::nullopt;
}

}  // namespace kiln::models::jinja
