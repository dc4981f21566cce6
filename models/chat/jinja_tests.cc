// jinja2's tests (`x is defined`, `n is divisibleby 3`, ...), from tests.py.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "models/chat/jinja_args.h"
#include "models/chat/jinja_builtins.h"
#include "models/chat/jinja_str_methods.h"

namespace kiln::models::jinja {
namespace {

#define KILN_JINJA_TEST(name) \
  absl::StatusOr<bool> name([[maybe_unused]] CallContext& ctx, const Value& v, CallArgs& args)

// Tests that take no argument besides the value.
#define KILN_JINJA_TEST0(name, result)                                  \
  KILN_JINJA_TEST(name) {                                              \
    if (absl::Status s = NoArgs(args, "the test"); !s.ok()) return s; \
    return result;                                                     \
  }

absl::StatusOr<const Value*> OneArg(CallArgs& args, absl::string_view test) {
  if (args.positional.size() + args.keyword.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("test '", test, "' takes exactly one argument"));
  }
  return args.positional.empty() ? &args.keyword[0].second : &args.positional[0];
}

absl::StatusOr<bool> Modulo(CallContext& ctx, const Value& v, const Value& n, int64_t want) {
  absl::StatusOr<Value> r = BinaryOperation(ctx, BinaryOp::kMod, v, n);
  if (!r.ok()) return r.status();
  return Equals(*r, Value::Int(want));
}

KILN_JINJA_TEST(TestOdd) {
  if (absl::Status s = NoArgs(args, "test 'odd'"); !s.ok()) return s;
  return Modulo(ctx, v, Value::Int(2), 1);
}
KILN_JINJA_TEST(TestEven) {
  if (absl::Status s = NoArgs(args, "test 'even'"); !s.ok()) return s;
  return Modulo(ctx, v, Value::Int(2), 0);
}
KILN_JINJA_TEST(TestDivisibleBy) {
  absl::StatusOr<const Value*> n = OneArg(args, "divisibleby");
  if (!n.ok()) return n.status();
  return Modulo(ctx, v, **n, 0);
}
KILN_JINJA_TEST0(TestDefined, !v.is_undefined())
KILN_JINJA_TEST0(TestUndefined, v.is_undefined())
KILN_JINJA_TEST0(TestNone, v.is_none())
KILN_JINJA_TEST0(TestBoolean, v.is_bool())
KILN_JINJA_TEST0(TestFalse, v.is_bool() && !v.bool_value())
KILN_JINJA_TEST0(TestTrue, v.is_bool() && v.bool_value())
KILN_JINJA_TEST0(TestInteger, v.is_int())
KILN_JINJA_TEST0(TestFloat, v.is_float())
KILN_JINJA_TEST0(TestString, v.is_string())
KILN_JINJA_TEST0(TestMapping, v.is_dict())
KILN_JINJA_TEST0(TestNumber, v.is_number())
KILN_JINJA_TEST0(TestEscaped, v.markup())
KILN_JINJA_TEST0(TestFilter, v.is_string() && (FindFilter(v.str()) || IsKnownJinjaFilter(v.str())))
KILN_JINJA_TEST0(TestTest, v.is_string() && (FindTest(v.str()) || IsKnownJinjaTest(v.str())))

// str(value).islower() / isupper()
absl::StatusOr<bool> CaseTest(CallContext& ctx, const Value& v, absl::string_view method) {
  CallArgs none;
  absl::StatusOr<Value> r = CallStrMethod(ctx, Value::String(Str(v)), method, none);
  if (!r.ok()) return r.status();
  return r->bool_value();
}
KILN_JINJA_TEST0(TestLower, CaseTest(ctx, v, "islower"))
KILN_JINJA_TEST0(TestUpper, CaseTest(ctx, v, "isupper"))

// Has len() and __getitem__.
KILN_JINJA_TEST(TestSequence) {
  if (absl::Status s = NoArgs(args, "test 'sequence'"); !s.ok()) return s;
  if (v.is_undefined() || v.is_string() || v.is_dict()) return true;
  return v.is_list() && (v.seq_kind() == SeqKind::kList || v.seq_kind() == SeqKind::kTuple);
}

KILN_JINJA_TEST(TestIterable) {
  if (absl::Status s = NoArgs(args, "test 'iterable'"); !s.ok()) return s;
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict() || v.is_object();
}

// Undefined and the loop object have __call__, so Python calls them callable.
KILN_JINJA_TEST0(TestCallable, v.is_callable() || v.is_undefined() ||
                                   (v.is_object() && v.object().TypeName() == "LoopContext"))

KILN_JINJA_TEST(TestSameAs) {
  absl::StatusOr<const Value*> other = OneArg(args, "sameas");
  if (!other.ok()) return other.status();
  const Value& o = **other;
  if (v.kind() != o.kind()) return false;
  switch (v.kind()) {
    case Kind::kNone:
    case Kind::kUndefined:
      return v.is_none() || v.identity() == o.identity();
    case Kind::kBool:
      return v.bool_value() == o.bool_value();
    case Kind::kInt:
      // CPython caches the small ints; larger equal ints are distinct objects.
      return v.int_value() == o.int_value() && v.int_value() >= -5 && v.int_value() <= 256;
    case Kind::kFloat:
      return false;
    default:
      return v.identity() == o.identity();
  }
}

KILN_JINJA_TEST(TestIn) {
  absl::StatusOr<const Value*> seq = OneArg(args, "in");
  if (!seq.ok()) return seq.status();
  return Contains(**seq, v);
}

template <CompareOp kOp>
KILN_JINJA_TEST(TestCompare) {
  absl::StatusOr<const Value*> other = OneArg(args, "comparison");
  if (!other.ok()) return other.status();
  if (kOp == CompareOp::kEq) return Equals(v, **other);
  if (kOp == CompareOp::kNe) return !Equals(v, **other);
  absl::StatusOr<int> c = Compare(v, **other, kOp == CompareOp::kLt   ? "<"
                                               : kOp == CompareOp::kLe ? "<="
                                               : kOp == CompareOp::kGt ? ">"
                                                                       : ">=");
  if (!c.ok()) return c.status();
  if (*c == 2) return false;  // NaN
  switch (kOp) {
    case CompareOp::kLt:
      return *c < 0;
    case CompareOp::kLe:
      return *c <= 0;
    case CompareOp::kGt:
      return *c > 0;
    default:
      return *c >= 0;
  }
}

struct TestEntry {
  absl::string_view name;
  TestFn fn;
};

constexpr TestEntry kTests[] = {
    {"odd", TestOdd},
    {"even", TestEven},
    {"divisibleby", TestDivisibleBy},
    {"defined", TestDefined},
    {"undefined", TestUndefined},
    {"filter", TestFilter},
    {"test", TestTest},
    {"none", TestNone},
    {"boolean", TestBoolean},
    {"false", TestFalse},
    {"true", TestTrue},
    {"integer", TestInteger},
    {"float", TestFloat},
    {"lower", TestLower},
    {"upper", TestUpper},
    {"string", TestString},
    {"mapping", TestMapping},
    {"number", TestNumber},
    {"sequence", TestSequence},
    {"iterable", TestIterable},
    {"callable", TestCallable},
    {"sameas", TestSameAs},
    {"escaped", TestEscaped},
    {"in", TestIn},
    {"==", TestCompare<CompareOp::kEq>},
    {"eq", TestCompare<CompareOp::kEq>},
    {"equalto", TestCompare<CompareOp::kEq>},
    {"!=", TestCompare<CompareOp::kNe>},
    {"ne", TestCompare<CompareOp::kNe>},
    {">", TestCompare<CompareOp::kGt>},
    {"gt", TestCompare<CompareOp::kGt>},
    {"greaterthan", TestCompare<CompareOp::kGt>},
    {">=", TestCompare<CompareOp::kGe>},
    {"ge", TestCompare<CompareOp::kGe>},
    {"<", TestCompare<CompareOp::kLt>},
    {"lt", TestCompare<CompareOp::kLt>},
    {"lessthan", TestCompare<CompareOp::kLt>},
    {"<=", TestCompare<CompareOp::kLe>},
    {"le", TestCompare<CompareOp::kLe>},
};

}  // namespace

TestFn FindTest(absl::string_view name) {
  for (const TestEntry& e : kTests) {
    if (e.name == name) return e.fn;
  }
  return nullptr;
}

// Every jinja2 test is implemented.
bool IsKnownJinjaTest(absl::string_view) { return false; }

}  // namespace kiln::models::jinja
