// Where a test finds the source tree and the build tree. The paths live in one translation unit
// (tests/test_paths.cpp, the only compile command that carries them): a -D with an absolute path
// would make every test's compile command differ between two checkouts, and ccache (whose
// CCACHE_BASEDIR rewrites path arguments, not the text of a -D) would compile them all again in
// a fresh clone. Every test target gets this header by -include (tests/CMakeLists.txt).
#pragma once

namespace vsynth_test_paths {  // not under vsynth: tests that use namespace vsynth keep their names
const char* source_dir();      // the project's source tree, absolute
const char* binary_dir();      // the build tree, absolute
}  // namespace vsynth_test_paths

#define VSYNTH_SOURCE_DIR (::vsynth_test_paths::source_dir())
#define VSYNTH_BINARY_DIR (::vsynth_test_paths::binary_dir())
