// A task's own decoding settings for generate.llm: the optional /decode object of a task
// record, laid over the stage's YAML settings. This is how one served request (vsynth serve)
// asks for its own budget, temperature, stop strings and seed without a pipeline per request;
// a batch task may carry it too.
//
//   {"id": "t1", "prefix": "def f(", "decode": {"max_new_tokens": 8, "temperature": 0,
//    "top_p": 0.9, "stop": ["\n"], "seed": 7, "warmup": false}}
//
// Every field is optional; their types and limits are declared once, in
// stages/facets/decode_fields.h. max_new_tokens replaces the stage's; temperature and top_p
// replace the stage's for attempt 1 (retries still add retry_temperature_step); stop strings
// are added to the stage's; warmup: true only prefills; n_indent, single_line and
// max_predict_ms replace the stage's (line_stops.h says how they end a suggestion).
// seed: the candidates' seeds mix it with attempt and index but not with the task id, so two
// tasks with equal prompts and seeds get equal text whatever their ids (a server numbers its
// requests; their results must not depend on that).
#pragma once

#include <cstdint>
#include <optional>

#include "graph/item.h"
#include "kernels/sampler/generator.h"
#include "stages/generation/line_stops.h"

namespace vsynth::stages::generation {

struct TaskDecode {
  kernels::GenerateOptions decode;  // the stage's settings with the task's over them
  std::optional<uint64_t> seed;     // the task's seed, when it gives one
  bool warmup = false;
  LineStops lines;             // the stage's with the task's over them
  bool task_n_indent = false;  // the task gave n_indent (the stage's block_stop then yields)
};

// Throws std::invalid_argument naming the task and the field (e.g. /decode/top_p) when a field
// has the wrong type or range, or /decode has a key it does not know.
TaskDecode task_decode(const graph::Item& item, const kernels::GenerateOptions& stage,
                       const LineStops& stage_lines = {});

}  // namespace vsynth::stages::generation
