// The paths of tests/test_paths.h, from this file's own compile definitions.
#include "tests/test_paths.h"

namespace vsynth_test_paths {  // not under vsynth: tests that use namespace vsynth keep their names
const char* source_dir() {
  return VSYNTH_TEST_SOURCE_DIR;
}
const char* binary_dir() {
  return VSYNTH_TEST_BINARY_DIR;
}
}  // namespace vsynth_test_paths
