// stages/ast/tree_walk.h: the pre-order walk (order, where it descends, a null root) and the
// named children of a node with their field names.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "stages/ast/parsed_file.h"
#include "stages/ast/tree_walk.h"

namespace ast = vsynth::stages::ast;

namespace {

const ast::ParsedFile& sample() {
  static const ast::ParsedFile file("walk.py", ast::Language::named("python"),
                                    "def f(x):\n    return x\n\ny = 1\n");
  return file;
}

}  // namespace

TEST_CASE("walk visits in pre-order and descends only where told", "[ast][walk]") {
  const ast::ParsedFile& file = sample();
  std::vector<std::string> named;
  ast::walk(file.root(), [&](TSNode n) {
    if (ts_node_is_named(n)) named.emplace_back(ts_node_type(n));
    return true;
  });
  CHECK(named == std::vector<std::string>{"module", "function_definition", "identifier",
                                          "parameters", "identifier", "block", "return_statement",
                                          "identifier", "expression_statement", "assignment",
                                          "identifier", "integer"});
  // Not descending into definitions: their insides are skipped, their siblings are not.
  named.clear();
  ast::walk(file.root(), [&](TSNode n) {
    if (ts_node_is_named(n)) named.emplace_back(ts_node_type(n));
    return std::string(ts_node_type(n)) != "function_definition";
  });
  CHECK(named == std::vector<std::string>{"module", "function_definition", "expression_statement",
                                          "assignment", "identifier", "integer"});
  // A subtree's walk stays inside it; a null node is no walk.
  int in_function = 0;
  ast::walk(ts_node_named_child(file.root(), 0), [&](TSNode) { return ++in_function, true; });
  CHECK(in_function == 12);  // function_definition def f parameters ( x ) : block ... x
  int in_null = 0;
  ast::walk(TSNode{}, [&](TSNode) { return ++in_null, true; });
  CHECK(in_null == 0);
}

TEST_CASE("for_each_named_child gives named children with their fields", "[ast][walk]") {
  const ast::ParsedFile& file = sample();
  const TSNode def = ts_node_named_child(file.root(), 0);
  std::vector<std::string> seen;
  const auto record = [&](TSNode child, const char* field) {
    seen.push_back(std::string(field ? field : "-") + ":" + ts_node_type(child));
  };
  ast::for_each_named_child(def, record);
  const std::vector<std::string> want = {"name:identifier", "parameters:parameters", "body:block"};
  CHECK(seen == want);
  // The same through a shared cursor.
  seen.clear();
  ast::TreeCursor shared(file.root());
  ast::for_each_named_child(shared.get(), def, record);
  CHECK(seen == want);
  seen.clear();
  ast::for_each_named_child(TSNode{}, record);
  CHECK(seen.empty());
}
