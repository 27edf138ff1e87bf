// Named functions that specs refer to by name: element functions for map, predicates for filter
// and generators. Each takes its arguments as a JSON object and is validated when it is built.
//
// Element functions (map "fn"):
//   identity                       returns its input
//   increment                      adds 1 to every value of every numeric component
//   sleep_ms {ms}                  sleeps `ms` (precisely) and returns its input: the guide's
//                                  mapped_function
//   busy_ms {ms}                   spins the CPU for `ms` and returns its input
//   fill_random {shape | shapes, seed?}
//                                  returns float32 tensors of the given shape(s) filled with a fast
//                                  counter-based PRNG seeded from `seed` and the input's value
// Predicates (filter "predicate"), on the int64/float value of component 0:
//   less_than {value}, greater_than {value}, equal {value}, not_equal {value},
//   modulo_equals {modulus, remainder}
// Generators (generator "fn"):
//   counter {count}                yields 0..count-1
//   random_tensors {count, shapes, delay_ms?, seed?}
//                                  yields `count` elements of float32 tensors of `shapes` filled
//                                  by the PRNG, each after sleeping `delay_ms`: the Ray article's
//                                  data_generator
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "pipeprof/pipelines/dataset.h"

namespace pipeprof::pipelines {

// Build a registered callable. `where` prefixes error messages (e.g. "spec.json: stages[1].args");
// errors are SpecError naming the argument and what was expected.
Function make_function(const std::string& name,
                       const nlohmann::json& args = nlohmann::json::object(),
                       const std::string& where = "args");
Predicate make_predicate(const std::string& name,
                         const nlohmann::json& args = nlohmann::json::object(),
                         const std::string& where = "args");
GeneratorFn make_generator(const std::string& name,
                           const nlohmann::json& args = nlohmann::json::object(),
                           const std::string& where = "args");

std::vector<std::string> function_names();
std::vector<std::string> predicate_names();
std::vector<std::string> generator_names();

// Fills `out` with uniform floats in [0, 1) from a counter-based hash of (seed, index): the same
// values for the same seed, and a loop the compiler vectorizes (~1 ns per value or better).
void fill_random(std::span<float> out, uint64_t seed);

}  // namespace pipeprof::pipelines
