#include "pipeprof/viewer/name_filter.h"

#include <gtest/gtest.h>

namespace pipeprof::viewer {
namespace {

TEST(NameFilter, EmptyTextMatchesEverything) {
  NameFilter f;
  EXPECT_FALSE(f.active());
  EXPECT_TRUE(f.matches(std::string_view("anything")));
  f.set_text("   ");
  EXPECT_FALSE(f.active());
  EXPECT_TRUE(f.matches(trace::StrId{12345}));
}

TEST(NameFilter, CaseInsensitiveSubstring) {
  NameFilter f;
  f.set_text(" Map ");
  EXPECT_TRUE(f.active());
  EXPECT_EQ(f.text(), " Map ");
  EXPECT_TRUE(f.matches(std::string_view("map 'parse'")));
  EXPECT_TRUE(f.matches(std::string_view("prefetch MAP")));
  EXPECT_FALSE(f.matches(std::string_view("ma p")));
  EXPECT_FALSE(f.matches(std::string_view("")));
}

TEST(NameFilter, PreparedTableAnswersById) {
  trace::StringTable strings;
  const auto a = strings.intern("get_next");
  const auto b = strings.intern("train_step");
  const auto c = strings.intern("GetNext");
  NameFilter f;
  f.set_text("next");
  f.prepare(strings);
  EXPECT_TRUE(f.matches(a));
  EXPECT_FALSE(f.matches(b));
  EXPECT_TRUE(f.matches(c));
  EXPECT_FALSE(f.matches(trace::kNoStr));
  EXPECT_EQ(f.matching_names(), 2u);
  f.set_text("step");  // a new text needs prepare() again; until then nothing matches by id
  EXPECT_FALSE(f.matches(b));
  f.prepare(strings);
  EXPECT_TRUE(f.matches(b));
}

}  // namespace
}  // namespace pipeprof::viewer
