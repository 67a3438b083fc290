// A shared library with no vsynth entry point at all.
extern "C" __attribute__((visibility("default"))) int not_a_plugin_answer() {
  return 42;
}
