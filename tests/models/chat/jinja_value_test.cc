// Tests of the template value type: Python's repr, equality and truth, dict
// key semantics, and JSON in and out.
#include "models/chat/jinja_value.h"

#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace kiln::models::jinja {
namespace {

TEST(JinjaValue, FloatReprIsPythons) {
  const std::pair<double, const char*> cases[] = {
      {0.0, "0.0"},       {-0.0, "-0.0"},      {1.0, "1.0"},           {0.1, "0.1"},
      {1e-05, "1e-05"},   {0.0001, "0.0001"},  {1e16, "1e+16"},        {1e15, "1000000000000000.0"},
      {1.5e300, "1.5e+300"}, {2.5e-300, "2.5e-300"}, {1.0 / 3, "0.3333333333333333"},
      {123456789.123, "123456789.123"},
  };
  for (const auto& [value, repr] : cases) EXPECT_EQ(FloatRepr(value), repr);
  EXPECT_EQ(FloatRepr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(FloatRepr(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(FloatRepr(std::numeric_limits<double>::quiet_NaN()), "nan");
}

TEST(JinjaValue, ReprAndStr) {
  EXPECT_EQ(Repr(Value::String("it's")), "\"it's\"");
  EXPECT_EQ(Repr(Value::String("a'\"b")), "'a\\'\"b'");
  EXPECT_EQ(Repr(Value::List({Value::Int(1), Value::None(), Value::Bool(true), Value::Float(2)})),
            "[1, None, True, 2.0]");
  EXPECT_EQ(Repr(Value::Tuple({Value::Int(1)})), "(1,)");
  EXPECT_EQ(Str(Value::Undefined("x")), "");
  EXPECT_EQ(Repr(Value::Undefined("x")), "Undefined");
  EXPECT_EQ(Str(Value::String("plain")), "plain");
}

TEST(JinjaValue, JsonInKeepsOrderedJsonOrderAndTypes) {
  const auto json = nlohmann::ordered_json::parse(
      R"({"z": 1, "a": [1.0, 2, -3, true, null, "s"], "big": 18446744073709551615})");
  absl::StatusOr<Value> v = FromJson(json);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(Repr(*v), "{'z': 1, 'a': [1.0, 2, -3, True, None, 's'], 'big': 1.8446744073709552e+19}");
  // nlohmann::json sorts keys; that is the caller's choice of type.
  absl::StatusOr<Value> sorted = FromJson(nlohmann::json::parse(R"({"z": 1, "a": 2})"));
  ASSERT_TRUE(sorted.ok());
  EXPECT_EQ(Repr(*sorted), "{'a': 2, 'z': 1}");
}

TEST(JinjaValue, JsonInRefusesExcessiveDepth) {
  std::string deep(1000, '[');
  deep += std::string(1000, ']');
  absl::StatusOr<Value> v = FromJson(nlohmann::ordered_json::parse(deep));
  EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(JinjaValue, JsonOutRoundTrips) {
  const auto json = nlohmann::ordered_json::parse(R"({"b": [1, 2.5, "x", null, false], "a": {}})");
  absl::StatusOr<Value> v = FromJson(json);
  ASSERT_TRUE(v.ok());
  absl::StatusOr<nlohmann::ordered_json> back = ToJson(*v);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, json);
  EXPECT_EQ(ToJson(Value::Undefined("u")).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(JinjaValue, DictKeysComparePythonStyle) {
  Dict d;
  d.Set(Value::Int(1), Value::String("int"));
  d.Set(Value::Float(1.0), Value::String("float"));
  d.Set(Value::Bool(true), Value::String("bool"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(Repr(Value::FromDict(d)), "{1: 'bool'}");
  // Large dicts index their string keys; order and overrides still hold.
  Dict big;
  for (int i = 0; i < 100; ++i) big.Set(Value::String(absl::StrCat("k", i)), Value::Int(i));
  big.Set(Value::String("k5"), Value::Int(-5));
  ASSERT_EQ(big.size(), 100u);
  EXPECT_EQ(big.Find("k5")->int_value(), -5);
  EXPECT_EQ(big.Find("k99")->int_value(), 99);
  EXPECT_EQ(big.Find("nope"), nullptr);
  EXPECT_EQ(big.entries()[5].first.str(), "k5");
}

TEST(JinjaValue, EqualityAndTruthArePythonsOwn) {
  EXPECT_TRUE(Equals(Value::Int(1), Value::Float(1.0)));
  EXPECT_TRUE(Equals(Value::Bool(true), Value::Int(1)));
  EXPECT_FALSE(Equals(Value::List({}), Value::Tuple({})));
  EXPECT_TRUE(Equals(Value::Undefined("a"), Value::Undefined("b")));
  EXPECT_FALSE(Equals(Value::Undefined("a"), Value::None()));
  EXPECT_FALSE(Truthy(Value::String("")));
  EXPECT_FALSE(Truthy(Value::Float(0.0)));
  EXPECT_TRUE(Truthy(Value::List({}, SeqKind::kIterator)));  // generators are always true
  EXPECT_FALSE(Truthy(Value::FromDict(Dict())));
}

}  // namespace
}  // namespace kiln::models::jinja
