#include "models/text/unicode_regex.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::models {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Matches = std::vector<std::pair<size_t, size_t>>;

Matches FindAll(const std::string& pattern, const std::string& text) {
  absl::StatusOr<std::unique_ptr<UnicodeRegex>> regex = UnicodeRegex::FromOniguruma(pattern);
  EXPECT_TRUE(regex.ok()) << regex.status();
  Matches matches;
  if (regex.ok()) {
    EXPECT_TRUE((*regex)->FindAll(text, &matches).ok());
  }
  return matches;
}

TEST(UnicodeRegex, RewritesOnigurumaClasses) {
  EXPECT_EQ(OnigurumaToPcre2("\\s+"), "[\\t\\n\\x0B\\f\\r\\x{85}\\p{Z}]+");
  EXPECT_EQ(OnigurumaToPcre2("[^\\s\\p{L}]"), "[^\\t\\n\\x0B\\f\\r\\x{85}\\p{Z}\\p{L}]");
  EXPECT_EQ(OnigurumaToPcre2("\\w\\h"), "[\\p{L}\\p{M}\\p{N}\\p{Pc}][0-9a-fA-F]");
  EXPECT_EQ(OnigurumaToPcre2("(?m:.)"), "(?s:.)");
  EXPECT_EQ(OnigurumaToPcre2("\\\\s"), "\\\\s");  // an escaped backslash, then s
  EXPECT_EQ(OnigurumaToPcre2("[]s]"), "[]s]");
  EXPECT_EQ(OnigurumaToPcre2("[[:alpha:]\\s]"), "[[:alpha:]\\t\\n\\x0B\\f\\r\\x{85}\\p{Z}]");
}

TEST(UnicodeRegex, ClassesMatchAsOniguruma) {
  EXPECT_THAT(FindAll("\\s", "\xC2\x85"), ElementsAre(std::pair<size_t, size_t>{0, 2}));    // NEL is a space
  EXPECT_THAT(FindAll("\\s", "\xE1\xA0\x8E"), IsEmpty());                                   // U+180E is not
  EXPECT_THAT(FindAll("\\w+", "e\xCC\x81"), ElementsAre(std::pair<size_t, size_t>{0, 3}));  // marks are word
  EXPECT_THAT(FindAll("(?i:'s)", "'S"), ElementsAre(std::pair<size_t, size_t>{0, 2}));
}

TEST(UnicodeRegex, LineAnchorsAsRuby) {
  EXPECT_THAT(FindAll("^a", "a\na"),
              ElementsAre(std::pair<size_t, size_t>{0, 1}, std::pair<size_t, size_t>{2, 3}));
}

TEST(UnicodeRegex, EmptyMatchesAsTheOnigCrate) {
  // An empty match right after a match is skipped, and the search goes on a
  // character later (not at once for a longer match).
  EXPECT_THAT(FindAll("a*", "baa"),
              ElementsAre(std::pair<size_t, size_t>{0, 0}, std::pair<size_t, size_t>{1, 3}));
  EXPECT_THAT(FindAll("", "\xC3\xA9x"),
              ElementsAre(std::pair<size_t, size_t>{0, 0}, std::pair<size_t, size_t>{2, 2},
                          std::pair<size_t, size_t>{3, 3}));
}

TEST(UnicodeRegex, LiteralIsNotARegex) {
  absl::StatusOr<std::unique_ptr<UnicodeRegex>> regex = UnicodeRegex::Literal("a.b");
  ASSERT_TRUE(regex.ok());
  Matches matches;
  ASSERT_TRUE((*regex)->FindAll("axb a.b", &matches).ok());
  EXPECT_THAT(matches, ElementsAre(std::pair<size_t, size_t>{4, 7}));
}

TEST(UnicodeRegex, BadPatternsAreInvalidArgument) {
  for (const std::string& pattern : {std::string("(a"), std::string("\xFF"), std::string(70000, 'a')}) {
    absl::StatusOr<std::unique_ptr<UnicodeRegex>> regex = UnicodeRegex::FromOniguruma(pattern);
    EXPECT_EQ(regex.status().code(), absl::StatusCode::kInvalidArgument) << pattern.substr(0, 10);
  }
}

TEST(UnicodeRegex, CatastrophicBacktrackingFailsInsteadOfHanging) {
  absl::StatusOr<std::unique_ptr<UnicodeRegex>> regex = UnicodeRegex::FromOniguruma("(a+)+$");
  ASSERT_TRUE(regex.ok());
  Matches matches;
  const absl::Status s = (*regex)->FindAll(std::string(40, 'a') + "b", &matches);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("limit"));
}

}  // namespace
}  // namespace kiln::models
