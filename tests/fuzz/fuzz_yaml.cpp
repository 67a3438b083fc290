// libFuzzer entry point for the pipeline loader and validator: arbitrary bytes as a pipeline
// file, checked against every real stage contract. Any input must end in a valid pipeline or
// diagnostics — never a crash, a hang or unbounded memory (alias bombs, deep nesting).
#include <cstddef>
#include <cstdint>
#include <string>

#include "graph/validate.h"
#include "stages/register_all.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const vsynth::graph::Registry registry = [] {
    vsynth::graph::Registry r;
    vsynth::stages::register_all(r);
    return r;
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  vsynth::graph::Diagnostics diags("fuzz.yaml");
  vsynth::graph::PipelineSpec spec = vsynth::graph::load_spec_string(text, "fuzz.yaml", diags);
  if (diags.empty()) vsynth::graph::validate(spec, registry, diags);
  (void)diags.format();
  return 0;
}
