// The plugin loader (graph/plugin_loader.h) on the tiny plugins of tests/plugins/modules,
// loaded in process against libvsynth.so as the vsynth binary loads them: a working plugin's
// kinds run like built-in ones; each way a load can fail is a diagnostic at the `plugins:`
// entry's file:line:col that names the plugin, never a crash.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "graph/pipeline.h"
#include "graph/plugin.h"
#include "graph/plugin_loader.h"
#include "stages/register_all.h"

namespace fs = std::filesystem;
using namespace vsynth;
using nlohmann::json;

namespace {

fs::path test_dir() {
  static const fs::path d = [] {
    // One folder per process: ctest runs each test case as its own process, in parallel, and
    // a shared folder would be removed under another case's feet.
    fs::path p = fs::path(VSYNTH_BINARY_DIR) / "plugins_loader_test" / std::to_string(::getpid());
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
  }();
  return d;
}

// Every built-in kind, as the vsynth binary has them.
graph::Registry builtins() {
  graph::Registry r;
  stages::register_all(r);
  return r;
}

// A pipeline file in the test folder: `plugins:` (a YAML flow list's items, one per line, so
// that entry i sits at line i + 2, column 5), then one stage of `kind`.
std::string pipeline(const std::string& name, const std::vector<std::string>& plugins,
                     const std::string& kind = "test.tag", const fs::path& dir = test_dir()) {
  const fs::path p = dir / (name + ".yaml");
  std::ofstream out(p);
  out << "pipeline: " << name << "\nplugins:\n";
  for (const auto& entry : plugins) out << "  - \"" << entry << "\"\n";
  out << "stages:\n  s: { use: " << kind << " }\nedges: [ s -> out ]\n";
  return p.string();
}

// The diagnostics loading `file` with its plugins gives (none: it loaded and validated).
graph::Diagnostics errors_of(const std::string& file, graph::Registry& registry) {
  try {
    graph::load_pipeline_with_plugins(file, registry);
  } catch (const graph::SpecError& e) {
    return e.diagnostics();
  }
  return graph::Diagnostics(file);
}

// The one diagnostic of a failed plugin entry at line 3 (the first entry), checked for its
// code and position; returns its formatted text.
std::string only_error(const graph::Diagnostics& d, const std::string& code) {
  INFO(d.format());
  REQUIRE(d.size() == 1);
  CHECK(d.list()[0].code == code);
  CHECK(d.list()[0].mark.line == 3);
  CHECK(d.list()[0].mark.col == 5);
  return d.list()[0].format();
}

class Source : public graph::Source {
 public:
  explicit Source(std::vector<graph::Task> t) : tasks_(t.begin(), t.end()) {}
  std::optional<graph::Task> next() override {
    if (tasks_.empty()) return std::nullopt;
    graph::Task t = std::move(tasks_.front());
    tasks_.pop_front();
    return t;
  }

 private:
  std::deque<graph::Task> tasks_;
};

class Sink : public graph::Sink {
 public:
  void write(const graph::Item& item) override { records[item.id()] = item.to_record(); }
  bool contains(std::string_view) const override { return false; }
  std::map<std::string, json> records;
};

}  // namespace

TEST_CASE("a plugin named in a pipeline adds kinds that validate and run like built-in ones") {
  graph::Registry registry = builtins();
  const std::string file = pipeline("good", {PLUGIN_GOOD});
  auto vp = graph::load_pipeline_with_plugins(file, registry);

  const std::string key = fs::canonical(PLUGIN_GOOD).string();
  REQUIRE(registry.find_stage("test.tag"));
  CHECK(registry.find_stage("test.tag")->source == key);
  REQUIRE(registry.find_resource("test.counter"));
  CHECK(registry.find_resource("test.counter")->source == key);
  CHECK(registry.find_stage("core.select")->source.empty());
  CHECK(registry.plugins() == std::vector<std::string>{key});

  graph::Pipeline p(std::move(vp), registry);
  Source src({{"a", json{{"id", "a"}}}});
  Sink sink;
  graph::RunControl control;
  p.run(src, sink, control);
  REQUIRE(sink.records.count("a"));
  CHECK(sink.records["a"]["facets"]["tag"] == "plugged");
  CHECK(sink.records["a"]["passed"] == true);
}

TEST_CASE("a plugin's parameters and facets are checked like a built-in stage's") {
  graph::Registry registry = builtins();
  const fs::path p = test_dir() / "typo.yaml";
  std::ofstream(p) << "plugins: [\"" << PLUGIN_GOOD << "\"]\nstages:\n"
                   << "  s: { use: test.tag, with: { lable: x } }\nedges: [ s -> out ]\n";
  const auto d = errors_of(p.string(), registry);
  INFO(d.format());
  REQUIRE(d.size() == 1);
  CHECK(d.list()[0].code == "param.unknown");
  CHECK(d.list()[0].message.find("did you mean `label`?") != std::string::npos);
}

TEST_CASE("a relative plugin path is the pipeline file's directory's") {
  const fs::path dir = test_dir() / "relative" / "pipelines";
  fs::create_directories(dir.parent_path() / "lib");
  fs::copy_file(PLUGIN_GOOD, dir.parent_path() / "lib" / "libtag.so",
                fs::copy_options::overwrite_existing);
  fs::create_directories(dir);
  graph::Registry registry = builtins();
  const auto d = errors_of(pipeline("rel", {"../lib/libtag.so"}, "test.tag", dir), registry);
  INFO(d.format());
  CHECK(d.empty());
  CHECK(registry.find_stage("test.tag")->source ==
        fs::canonical(dir.parent_path() / "lib" / "libtag.so").string());
}

TEST_CASE("a plugin named twice, or already loaded, is loaded once") {
  graph::Registry registry = builtins();
  REQUIRE_FALSE(graph::load_plugin(registry, PLUGIN_GOOD));
  const std::string same =
      (fs::path(PLUGIN_GOOD).parent_path() / "." / fs::path(PLUGIN_GOOD).filename()).string();
  const auto d = errors_of(pipeline("twice", {PLUGIN_GOOD, same}), registry);
  INFO(d.format());
  CHECK(d.empty());
  CHECK(registry.plugins().size() == 1);
}

TEST_CASE("a plugin file that does not exist is an error at its entry") {
  graph::Registry registry = builtins();
  const std::string text = only_error(
      errors_of(pipeline("missing", {"no/such/libplugin.so"}), registry), "plugin.missing");
  CHECK(text.find("missing.yaml:3:5: error: plugin `") != std::string::npos);
  CHECK(text.find("no/such/libplugin.so`: no such file") != std::string::npos);
}

TEST_CASE("a file that is not a shared library is an error with the loader's reason") {
  const fs::path fake = test_dir() / "libfake.so";
  std::ofstream(fake) << "not an ELF file\n";
  graph::Registry registry = builtins();
  const std::string text =
      only_error(errors_of(pipeline("fake", {fake.string()}), registry), "plugin.open");
  CHECK(text.find("could not be loaded: ") != std::string::npos);
  CHECK(text.find("libfake.so") != std::string::npos);
}

TEST_CASE("a shared library without the plugin entry points is refused") {
  graph::Registry registry = builtins();
  SECTION("no vsynth_plugin_abi") {
    const std::string text = only_error(
        errors_of(pipeline("not_plugin", {PLUGIN_NOT_A_PLUGIN}), registry), "plugin.symbol");
    CHECK(text.find("is not a vsynth plugin: it exports no `vsynth_plugin_abi`") !=
          std::string::npos);
    CHECK(text.find("VSYNTH_PLUGIN(fn)") != std::string::npos);
  }
  SECTION("no vsynth_plugin_register") {
    const std::string text = only_error(
        errors_of(pipeline("no_register", {PLUGIN_NO_REGISTER}), registry), "plugin.symbol");
    CHECK(text.find("exports no `vsynth_plugin_register`") != std::string::npos);
  }
  CHECK(registry.plugins().empty());
}

TEST_CASE("a plugin built against another vsynth is refused, both versions named") {
  graph::Registry registry = builtins();
  const std::string text =
      only_error(errors_of(pipeline("old_abi", {PLUGIN_OLD_ABI}), registry), "plugin.abi");
  CHECK(text.find("was built against vsynth 0.0.1 (") != std::string::npos);
  CHECK(text.find(std::string("this is ") + VSYNTH_PLUGIN_ABI) != std::string::npos);
  CHECK(std::string(VSYNTH_PLUGIN_ABI).find(std::string("vsynth ") + VSYNTH_VERSION_STRING) == 0);
}

TEST_CASE("a plugin whose registration throws is refused with the exception's message") {
  graph::Registry registry = builtins();
  const std::string text =
      only_error(errors_of(pipeline("throws", {PLUGIN_THROWING}), registry), "plugin.register");
  CHECK(text.find("failed to register its kinds: no licence server at 10.0.0.1") !=
        std::string::npos);
  CHECK(text.find("throwing") != std::string::npos);  // the plugin's file name
  CHECK(registry.plugins().empty());
}

TEST_CASE("a plugin registering an existing kind is refused whole") {
  graph::Registry registry = builtins();
  SECTION("a built-in kind") {
    const std::string text =
        only_error(errors_of(pipeline("clash", {PLUGIN_CLASH}), registry), "plugin.duplicate");
    CHECK(text.find("stage kind `core.select` is already registered (built in)") !=
          std::string::npos);
    CHECK_FALSE(registry.find_stage("test.fresh"));  // its other kind is not added either
    CHECK(registry.plugins().empty());
  }
  SECTION("another plugin's kind") {
    const auto d = errors_of(pipeline("twins", {PLUGIN_GOOD, PLUGIN_TWIN}), registry);
    INFO(d.format());
    REQUIRE(d.size() == 1);
    CHECK(d.list()[0].code == "plugin.duplicate");
    CHECK(d.list()[0].mark.line == 4);  // the second entry
    CHECK(d.list()[0].mark.col == 5);
    CHECK(d.list()[0].message.find("is already registered (from plugin `" +
                                   fs::canonical(PLUGIN_GOOD).string() + "`)") !=
          std::string::npos);
    CHECK(registry.plugins().size() == 1);
  }
}

TEST_CASE("every failing entry is reported, and the pipeline is not validated further") {
  graph::Registry registry = builtins();
  // With no plugin loaded, `test.tag` would be an unknown kind: that is not reported.
  const auto d =
      errors_of(pipeline("several", {"missing.so", PLUGIN_OLD_ABI, PLUGIN_THROWING}), registry);
  INFO(d.format());
  REQUIRE(d.size() == 3);
  CHECK(d.list()[0].code == "plugin.missing");
  CHECK(d.list()[1].code == "plugin.abi");
  CHECK(d.list()[1].mark.line == 4);
  CHECK(d.list()[2].code == "plugin.register");
  CHECK(d.list()[2].mark.line == 5);
}

TEST_CASE("validating against a registry without the file's plugins says so") {
  const graph::Registry registry = builtins();
  const std::string file = pipeline("unloaded", {PLUGIN_GOOD});
  try {
    graph::load_pipeline(file, registry);
    FAIL("validated without the plugin");
  } catch (const graph::SpecError& e) {
    const auto& d = e.diagnostics();
    INFO(d.format());
    REQUIRE(d.size() >= 1);
    CHECK(d.list()[0].code == "plugin.not_loaded");
    CHECK(d.list()[0].mark.line == 3);
  }
}

TEST_CASE("plugins: must be a list of paths") {
  graph::Diagnostics d("shape.yaml");
  graph::load_spec_string("plugins: libx.so\nstages: {}\nedges: []\n", "shape.yaml", d);
  REQUIRE(d.size() == 1);
  CHECK(d.list()[0].code == "shape");
  CHECK(d.list()[0].mark.line == 1);
  graph::Diagnostics d2("type.yaml");
  graph::load_spec_string("plugins: [ {a: 1} ]\nstages: {}\nedges: []\n", "type.yaml", d2);
  REQUIRE(d2.size() == 1);
  CHECK(d2.list()[0].code == "type");
  CHECK(d2.list()[0].mark.col == 12);
}

TEST_CASE("VSYNTH_PLUGIN_PATH holds files and directories of .so files") {
  const fs::path dir = test_dir() / "search";
  fs::create_directories(dir);
  for (const char* f : {"b.so", "a.so", "notes.txt"}) std::ofstream(dir / f) << "x";
  std::vector<graph::PluginError> errors;
  const auto files = graph::plugin_search_path(
      std::string(PLUGIN_GOOD) + "::" + dir.string() + ":" + (dir / "gone").string(), errors);
  CHECK(files ==
        std::vector<std::string>{PLUGIN_GOOD, (dir / "a.so").string(), (dir / "b.so").string()});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].code == "plugin.missing");
  CHECK(errors[0].message.find("gone`: no such file or directory") != std::string::npos);
}

TEST_CASE("a directory given as a plugin is refused") {
  graph::Registry registry = builtins();
  const auto e = graph::load_plugin(registry, test_dir().string());
  REQUIRE(e);
  CHECK(e->code == "plugin.missing");
  CHECK(e->message.find("is a directory") != std::string::npos);
}
