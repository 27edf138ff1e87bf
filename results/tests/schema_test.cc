#include <gtest/gtest.h>

#include "pipeprof/results/document.h"
#include "pipeprof/results/results_file.h"
#include "schema_check.h"

namespace pipeprof::results {
namespace {

using testing::read_json;
using testing::joined;
using testing::schema_problems;

TEST(Schema, IsDraft2020AndDescribesTheVersionWeWrite) {
  const nlohmann::json schema = read_json(PIPEPROF_RESULTS_SCHEMA);
  EXPECT_EQ(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
  EXPECT_EQ(schema["properties"]["schema_version"]["const"], kSchemaVersion);
}

TEST(Schema, TheCheckFindsMissingKeysAndWrongTypes) {
  const nlohmann::json schema = read_json(PIPEPROF_RESULTS_SCHEMA);
  nlohmann::json doc = read_json(PIPEPROF_RESULTS_TEST_DATA "/golden/results.json");
  ASSERT_EQ(joined(schema_problems(schema, doc)), "");
  doc["experiments"][0]["repetitions"][0].erase("wall_ms");
  doc["environment"]["cores"] = "two";
  doc["schema_version"] = 1;
  const auto problems = schema_problems(schema, doc);
  EXPECT_EQ(problems.size(), 3u) << joined(problems);
  EXPECT_NE(
      joined(problems).find("$.experiments[0].repetitions[0]: missing required key \"wall_ms\""),
      std::string::npos)
      << joined(problems);
}

TEST(Schema, MakeDocumentWritesEveryRequiredTopLevelAndEnvironmentKey) {
  const nlohmann::json schema = read_json(PIPEPROF_RESULTS_SCHEMA);
  const nlohmann::json golden = read_json(PIPEPROF_RESULTS_TEST_DATA "/golden/results.json");
  nlohmann::json experiments = golden["experiments"];
  for (auto& x : experiments)
    for (auto& rep : x["repetitions"])
      rep.erase("efficiency");  // make_document adds it
  const nlohmann::json doc =
      make_document(capture_environment("0.1.0"), experiments,
                    {.repetitions = 3, .machine = golden["machine"], .created_utc = utc_now()});
  EXPECT_EQ(joined(schema_problems(schema, doc)), "");
  EXPECT_EQ(doc["schema_version"], kSchemaVersion);
  // Per-repetition efficiency: ideal / wall, null without a positive ideal.
  const auto& naive = doc["experiments"][0];
  EXPECT_DOUBLE_EQ(
      naive["repetitions"][0]["efficiency"].get<double>(),
      naive["ideal_ms"].get<double>() / naive["repetitions"][0]["wall_ms"].get<double>());
  EXPECT_TRUE(doc["experiments"][2]["repetitions"][0]["efficiency"].is_null());
}

}  // namespace
}  // namespace pipeprof::results
