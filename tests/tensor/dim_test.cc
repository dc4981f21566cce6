#include "tensor/dim.h"

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_util.h"

namespace kiln {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

Hash128 HashOf(const Dim& d) {
  StableHasher h;
  d.Hash(h);
  return h.Finish();
}

// ---- Symbol

TEST(Symbol, InternsByNameAndBound) {
  const Symbol a("pos", 100);
  const Symbol b("pos", 100);
  EXPECT_TRUE(a == b);
  EXPECT_EQ(a.info(), b.info());
  EXPECT_EQ(a.name(), "pos");
  EXPECT_EQ(a.max_value(), 100);
}

TEST(Symbol, DifferentBoundIsADifferentSymbol) {
  const Symbol a("pos", 100);
  const Symbol b("pos", 200);
  EXPECT_FALSE(a == b);
  EXPECT_NE(a.info(), b.info());
  EXPECT_FALSE(Dim(a) == Dim(b));
}

TEST(Symbol, DifferentNameIsADifferentSymbol) {
  EXPECT_FALSE(Symbol("pos", 100) == Symbol("len", 100));
  EXPECT_FALSE(Dim(Symbol("pos", 100)) == Dim(Symbol("len", 100)));
}

TEST(Symbol, ValidateAcceptsIdentifiersAndBoundsInRange) {
  KILN_EXPECT_OK(Symbol("pos", 0).Validate());
  KILN_EXPECT_OK(Symbol("pos", 4096).Validate());
  KILN_EXPECT_OK(Symbol("_x1", 1).Validate());
  KILN_EXPECT_OK(Symbol("X", 1).Validate());
  KILN_EXPECT_OK(Symbol("kv_len", kMaxDimValue).Validate());
}

TEST(Symbol, ValidateRejectsNonIdentifierNames) {
  for (const char* name : {"", "1x", "9", "a-b", "a b", "pos+1", "x.y", "ä", "$n", " n"}) {
    const absl::Status s = Symbol(name, 10).Validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << "'" << name << "': " << s;
  }
}

TEST(Symbol, ValidateRejectsBoundsOutOfRange) {
  const absl::Status negative = Symbol("neg_bound", -1).Validate();
  EXPECT_EQ(negative.code(), absl::StatusCode::kInvalidArgument) << negative;
  EXPECT_THAT(std::string(negative.message()), ::testing::HasSubstr("neg_bound"));
  EXPECT_EQ(Symbol("big_bound", kMaxDimValue + 1).Validate().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Symbol("huge_bound", kInt64Max).Validate().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Symbol("min_bound", kInt64Min).Validate().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Symbol, InterningIsThreadSafe) {
  const SymbolInfo* expected = Symbol("threaded_sym", 5).info();
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        if (Symbol("threaded_sym", 5).info() != expected) ++mismatches;
        // New symbols are interned concurrently too.
        const std::string name = "threaded_" + std::to_string(t) + "_" + std::to_string(i % 7);
        if (Symbol(name, i % 3).info() != Symbol(name, i % 3).info()) ++mismatches;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// ---- Bindings

TEST(Bindings, SetAndFind) {
  const Symbol pos("pos", 100);
  const Symbol pos2("pos", 200);
  Bindings b;
  EXPECT_TRUE(b.empty());
  EXPECT_FALSE(b.Find(pos.info()).has_value());
  b.Set(pos, 7);
  EXPECT_FALSE(b.empty());
  EXPECT_EQ(b.Find(pos.info()), 7);
  // Bound per symbol (name and bound), not per name.
  EXPECT_FALSE(b.Find(pos2.info()).has_value());
  b.Set(pos, 9);
  EXPECT_EQ(b.Find(pos.info()), 9);
  EXPECT_EQ(b.values().size(), 1u);
}

TEST(Bindings, InitializerList) {
  const Symbol n("n", 10), m("m", 10);
  const Bindings b{{n, 3}, {m, 4}};
  EXPECT_EQ(b.Find(n.info()), 3);
  EXPECT_EQ(b.Find(m.info()), 4);
  // An equal Symbol made later finds the same binding.
  EXPECT_EQ(b.Find(Symbol("n", 10).info()), 3);
}

// ---- Dim construction and printing

TEST(Dim, ConcreteBasics) {
  const Dim d(7);
  EXPECT_TRUE(d.is_concrete());
  EXPECT_EQ(d.value(), 7);
  EXPECT_EQ(d.concrete(), 7);
  EXPECT_EQ(d.offset(), 7);
  EXPECT_TRUE(d.terms().empty());
  EXPECT_EQ(d.ToString(), "7");
  EXPECT_EQ(Dim().value(), 0);
  EXPECT_TRUE(Dim(int64_t{5}) == Dim(5));
  EXPECT_FALSE(Dim(5) == Dim(6));
  EXPECT_EQ(Dim(-3).ToString(), "-3");
}

TEST(Dim, SymbolicBasics) {
  const Symbol pos("pos", 100);
  const Dim d(pos);
  EXPECT_FALSE(d.is_concrete());
  EXPECT_FALSE(d.concrete().has_value());
  EXPECT_EQ(d.offset(), 0);
  ASSERT_EQ(d.terms().size(), 1u);
  EXPECT_EQ(d.terms()[0].symbol, pos.info());
  EXPECT_EQ(d.terms()[0].coeff, 1);
  EXPECT_EQ(d.ToString(), "pos");
  EXPECT_TRUE(d == Dim(Symbol("pos", 100)));
}

TEST(Dim, ToStringForms) {
  const Dim pos(Symbol("pos", 100));
  const Dim n(Symbol("n", 10));
  const Dim m(Symbol("m", 10));
  EXPECT_EQ((pos + 1).ToString(), "pos+1");
  EXPECT_EQ((pos - 1).ToString(), "pos-1");
  EXPECT_EQ((2 * pos - 3).ToString(), "2*pos-3");
  EXPECT_EQ((pos * 2 - 3).ToString(), "2*pos-3");
  EXPECT_EQ((Dim(0) - pos).ToString(), "-pos");
  EXPECT_EQ((pos * -2).ToString(), "-2*pos");
  EXPECT_EQ((Dim(3) - pos).ToString(), "-pos+3");
  EXPECT_EQ((n + m + 4).ToString(), "m+n+4");  // terms in name order
  EXPECT_EQ((n - m).ToString(), "-m+n");
  EXPECT_EQ((n + m).ToString(), (m + n).ToString());
  EXPECT_EQ((pos * 1).ToString(), "pos");
}

TEST(Dim, AdditionIsCommutativeAndCanonical) {
  const Dim n(Symbol("n", 10));
  const Dim m(Symbol("m", 10));
  EXPECT_TRUE(n + m == m + n);
  EXPECT_TRUE((n + 1) + m == n + (m + 1));
  EXPECT_TRUE(n + n == 2 * n);
  EXPECT_TRUE(Dim(2) + 3 == Dim(5));
}

TEST(Dim, TermsWithSameNameButDifferentBoundDoNotMerge) {
  const Dim a(Symbol("t", 10));
  const Dim b(Symbol("t", 20));
  const Dim sum = a + b;
  EXPECT_EQ(sum.terms().size(), 2u);
  EXPECT_EQ((a - b).terms().size(), 2u);  // no cancellation across bounds
}

TEST(Dim, Cancellation) {
  const Dim pos(Symbol("pos", 100));
  const Dim n(Symbol("n", 10));
  EXPECT_TRUE((pos + n) - pos == n);
  const Dim five = (pos + 5) - pos;
  ASSERT_TRUE(five.is_concrete());
  EXPECT_EQ(five.value(), 5);
  const Dim zero = pos - pos;
  EXPECT_TRUE(zero.is_concrete());
  EXPECT_TRUE(zero.terms().empty());
  EXPECT_EQ(zero.value(), 0);
  EXPECT_TRUE(2 * pos - pos == pos);
  EXPECT_TRUE(pos * 0 == Dim(0));
  EXPECT_TRUE((pos * 0).is_concrete());
  // (pos + n) - (n + pos) - 1 == -1, concrete.
  const Dim minus_one = (pos + n) - (n + pos) - 1;
  ASSERT_TRUE(minus_one.is_concrete());
  EXPECT_EQ(minus_one.value(), -1);
}

TEST(Dim, MinAndMaxValues) {
  const Dim pos(Symbol("pos", 100));
  const Dim n(Symbol("n", 10));
  EXPECT_EQ(pos.min_value(), 0);
  EXPECT_EQ(pos.max_value(), 100);
  EXPECT_EQ((pos + 1).min_value(), 1);
  EXPECT_EQ((pos + 1).max_value(), 101);
  EXPECT_EQ((2 * pos - 3).min_value(), -3);
  EXPECT_EQ((2 * pos - 3).max_value(), 197);
  EXPECT_EQ((n - pos).min_value(), -100);
  EXPECT_EQ((n - pos).max_value(), 10);
  EXPECT_EQ((pos + n).max_value(), 110);
  EXPECT_EQ(Dim(7).min_value(), 7);
  EXPECT_EQ(Dim(7).max_value(), 7);
  EXPECT_EQ(Dim(Symbol("zero_bound", 0)).max_value(), 0);
}

TEST(Dim, EvaluateWithBindings) {
  const Symbol pos("pos", 100);
  const Symbol n("n", 10);
  const Dim d = 2 * Dim(pos) - 3 + Dim(n);
  absl::StatusOr<int64_t> v = d.Evaluate(Bindings{{pos, 5}, {n, 4}});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, 11);
  v = Dim(42).Evaluate(Bindings{});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 42);
  // Unused bindings are fine.
  v = Dim(pos).Evaluate(Bindings{{pos, 0}, {n, 3}});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 0);
}

TEST(Dim, EvaluateUnboundSymbolIsFailedPrecondition) {
  const Symbol pos("pos", 100);
  const Symbol n("n", 10);
  absl::StatusOr<int64_t> v = (Dim(pos) + 1).Evaluate(Bindings{});
  EXPECT_EQ(v.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(v.status().message()), ::testing::HasSubstr("pos"));
  // One of two bound is still an error, naming the missing one.
  v = (Dim(pos) + Dim(n)).Evaluate(Bindings{{pos, 1}});
  EXPECT_EQ(v.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(v.status().message()), ::testing::HasSubstr("'n'"));
  // A binding of the same name with another bound is a different symbol.
  v = Dim(pos).Evaluate(Bindings{{Symbol("pos", 200), 5}});
  EXPECT_EQ(v.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(Dim, EvaluateOverflowIsAnError) {
  const Symbol big("big", kMaxDimValue);
  const Dim d = Dim(big) * (int64_t{1} << 30);
  absl::StatusOr<int64_t> v = d.Evaluate(Bindings{{big, kInt64Max}});
  EXPECT_FALSE(v.ok());
}

// ---- Validate

TEST(Dim, ValidateAcceptsValidDims) {
  const Dim pos(Symbol("pos", 100));
  KILN_EXPECT_OK(Dim(0).Validate("d"));
  KILN_EXPECT_OK(Dim(kMaxDimValue).Validate("d"));
  KILN_EXPECT_OK(pos.Validate("d"));
  KILN_EXPECT_OK((pos + 1).Validate("d"));
  KILN_EXPECT_OK((2 * pos + 3).Validate("d"));
  KILN_EXPECT_OK((Dim(100) - pos).Validate("d"));  // least value 0
}

TEST(Dim, ValidateRejectsNegative) {
  const Dim pos(Symbol("pos", 100));
  absl::Status s = Dim(-1).Validate("dimension 0");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("dimension 0"));
  s = (pos - 1).Validate("the length");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("the length"));
  EXPECT_EQ((Dim(99) - pos).Validate("d").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((2 * pos - 3).Validate("d").code(), absl::StatusCode::kInvalidArgument);
}

TEST(Dim, ValidateRejectsValuesAboveLimit) {
  EXPECT_EQ(Dim(kMaxDimValue + 1).Validate("d").code(), absl::StatusCode::kInvalidArgument);
  const Dim top(Symbol("top", kMaxDimValue));
  KILN_EXPECT_OK(top.Validate("d"));
  EXPECT_EQ((top + 1).Validate("d").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((top * 2).Validate("d").code(), absl::StatusCode::kInvalidArgument);
}

TEST(Dim, ValidateRejectsOverflow) {
  // Huge multiplications overflow int64 and leave a Dim that is invalid.
  const Dim big = Dim(int64_t{1} << 40) * (int64_t{1} << 40);
  absl::Status s = big.Validate("dimension 2");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("dimension 2"));
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("overflow"));

  EXPECT_FALSE((Dim(kInt64Max) + 1).Validate("d").ok());
  EXPECT_FALSE((Dim(kInt64Min) - 1).Validate("d").ok());
  EXPECT_FALSE((Dim(0) - Dim(kInt64Min)).Validate("d").ok());
  EXPECT_FALSE((Dim(kInt64Min) * -1).Validate("d").ok());

  const Dim pos(Symbol("pos", 100));
  EXPECT_FALSE((pos * kInt64Max * 2).Validate("d").ok());  // coefficient overflows
  EXPECT_FALSE((pos * kInt64Max + pos).Validate("d").ok());
}

TEST(Dim, OverflowIsSticky) {
  const Dim over = Dim(kInt64Max) + 1;
  EXPECT_FALSE((over - 1).Validate("d").ok());
  EXPECT_FALSE((over * 0).Validate("d").ok());
  EXPECT_FALSE((over + Dim(Symbol("pos", 100))).Validate("d").ok());
  EXPECT_FALSE((Dim(1) + over).Validate("d").ok());
  // An overflowed Dim equals no ordinary one.
  EXPECT_FALSE(over == Dim(0));
  EXPECT_FALSE(over - 1 == Dim(kInt64Max));
}

TEST(Dim, ValidateRejectsInvalidSymbols) {
  EXPECT_EQ(Dim(Symbol("", 10)).Validate("d").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Dim(Symbol("1x", 10)).Validate("d").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Dim(Symbol("ok_name", -1)).Validate("d").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((Dim(Symbol("ok_name", kMaxDimValue + 1)) + 0).Validate("d").code(),
            absl::StatusCode::kInvalidArgument);
  // An invalid symbol is caught even when its term is combined with others.
  EXPECT_EQ((Dim(Symbol("a b", 10)) + Dim(Symbol("pos", 10)) + 1).Validate("d").code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- Hash and equality

TEST(Dim, HashIsEqualForEqualDims) {
  const Dim pos(Symbol("pos", 100));
  const Dim n(Symbol("n", 10));
  EXPECT_EQ(HashOf(pos + 1), HashOf(pos + 1));
  EXPECT_EQ(HashOf(pos + 1), HashOf((pos + 2) - 1));
  EXPECT_EQ(HashOf(n + pos), HashOf(pos + n));
  EXPECT_EQ(HashOf(Dim(5)), HashOf((pos + 5) - pos));
  EXPECT_EQ(HashOf(Dim(Symbol("pos", 100))), HashOf(pos));
}

TEST(Dim, HashDiffersForDifferentDims) {
  const Dim pos(Symbol("pos", 100));
  EXPECT_NE(HashOf(pos), HashOf(pos + 1));
  EXPECT_NE(HashOf(pos), HashOf(2 * pos));
  EXPECT_NE(HashOf(pos), HashOf(Dim(Symbol("pos", 101))));  // bound
  EXPECT_NE(HashOf(pos), HashOf(Dim(Symbol("len", 100))));  // name
  EXPECT_NE(HashOf(Dim(0)), HashOf(pos));
  EXPECT_NE(HashOf(Dim(3)), HashOf(Dim(4)));
  EXPECT_NE(HashOf(Dim(0)), HashOf(Dim(kInt64Max) + 1));  // overflow marker
  EXPECT_NE(HashOf(pos - 1), HashOf(Dim(0) - pos + 1));
}

TEST(DimDeathTest, ValueOfSymbolicDimAborts) {
  const Dim pos(Symbol("pos", 100));
  EXPECT_DEATH((void)pos.value(), "symbolic");
}

}  // namespace
}  // namespace kiln
