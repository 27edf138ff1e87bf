#include "pipeprof/viewer/palette.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace pipeprof::viewer {
namespace {

TEST(Palette, SameNameSameColourAndStableHash) {
  EXPECT_EQ(name_colour("map 'parse'"), name_colour(std::string("map 'parse'")));
  // FNV-1a reference values: the palette must not change between builds or platforms.
  EXPECT_EQ(stable_hash(""), 14695981039346656037ULL);
  EXPECT_EQ(stable_hash("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(name_colour("x"), palette_colour(palette_index("x")));
}

TEST(Palette, NamesSpreadOverThePalette) {
  std::set<int> used;
  for (int i = 0; i < 200; ++i)
    used.insert(palette_index("stage_" + std::to_string(i)));
  EXPECT_GE(static_cast<int>(used.size()), palette_size() * 3 / 4);
  for (const int i : used) {
    EXPECT_GE(i, 0);
    EXPECT_LT(i, palette_size());
  }
}

TEST(Palette, EntriesAreOpaqueAndDifferFromTheBackground) {
  for (int i = 0; i < palette_size(); ++i) {
    const Rgba c = palette_colour(i);
    EXPECT_EQ(alpha(c), 255u);
    EXPECT_NE(c, kCanvasBackground);
    EXPECT_NE(dimmed(c), c);
  }
  EXPECT_EQ(palette_colour(-1), palette_colour(palette_size() - 1));
}

TEST(Palette, BlendAndTextColour) {
  EXPECT_EQ(blend(rgba(0, 0, 0), rgba(200, 100, 50), 0.0f), rgba(0, 0, 0));
  EXPECT_EQ(blend(rgba(0, 0, 0), rgba(200, 100, 50), 1.0f), rgba(200, 100, 50));
  EXPECT_EQ(blend(rgba(0, 0, 0), rgba(200, 100, 50), 0.5f), rgba(100, 50, 25));
  EXPECT_EQ(text_colour_on(rgba(250, 250, 250)), rgba(0, 0, 0));
  EXPECT_EQ(text_colour_on(rgba(20, 20, 60)), rgba(255, 255, 255));
  EXPECT_LT(red(darker(rgba(200, 200, 200))), 200u);
}

}  // namespace
}  // namespace pipeprof::viewer
