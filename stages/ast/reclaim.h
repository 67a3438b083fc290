// Frees superseded parsed files off the request path. Releasing a tree-sitter tree walks every
// subtree (milliseconds for a 2000-line file), so the parse cache and the project index hand
// the versions they drop to one background thread instead of freeing them where a request
// waits (or, in the cache, under its lock). The thread runs SCHED_BATCH, so a retirement never
// wakes it into preempting the request on its core. It starts on first use; at process exit
// it frees whatever is still queued and is joined.
#pragma once

#include <memory>

#include "stages/ast/parsed_file.h"

namespace vsynth::stages::ast {

// Drops `file` on the reclaimer thread (a no-op for a null pointer). The file is only freed
// there if this was its last owner. Anything that owns parsed files may be retired the same
// way (stages/context's extracted units hold their file).
void retire(std::shared_ptr<const void> file);

// Blocks until every file retired before the call has been dropped (tests, benchmarks).
void drain_retired();

}  // namespace vsynth::stages::ast
