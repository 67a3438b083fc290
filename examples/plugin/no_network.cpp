// example.no_network: a validation stage in a plugin (README.md). It reads the candidates
// generate.llm made (the shared `candidates` facet) and sends the item on through `clean` when
// no candidate's code names a banned module or call as a word, else through `network` with
// feedback, so that a back edge can ask the model for another attempt. Its `network_check`
// facet lists, per candidate, the first banned name found ("" when none).
#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "graph/plugin.h"
#include "graph/stage.h"
#include "stages/facets/candidates.h"

namespace {

using namespace vsynth;

struct NetworkCheck : graph::Facet {
  static constexpr std::string_view kName = "network_check";
  std::vector<std::string> found;  // per candidate
  nlohmann::json to_json() const override { return {{"found", found}}; }
};

// The first of `banned` that `code` holds as a whole word (`sockets` is not `socket`).
std::string first_banned(std::string_view code, const std::vector<std::string>& banned) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (const auto& name : banned) {
    for (auto at = code.find(name); at != code.npos; at = code.find(name, at + 1)) {
      const auto end = at + name.size();
      if ((at == 0 || !word(code[at - 1])) && (end == code.size() || !word(code[end]))) {
        return name;
      }
    }
  }
  return "";
}

class NoNetwork : public graph::SyncStage {
 public:
  explicit NoNetwork(const graph::StageContext& ctx)
      : name_(ctx.name),
        banned_(ctx.params.strings("banned")),
        clean_(ctx.port("clean")),
        network_(ctx.port("network")) {}

  graph::Port process(graph::Item& item) override {
    auto& check = item.emplace<NetworkCheck>();
    std::string uses;
    for (const auto& c : item.get<stages::facets::CandidatesFacet>().candidates) {
      check.found.push_back(first_banned(c.code, banned_));
      if (!check.found.back().empty()) uses += (uses.empty() ? "" : ", ") + check.found.back();
    }
    if (uses.empty()) return clean_;
    item.add_feedback(name_, "network", "do not use the network (the code used " + uses + ")");
    return network_;
  }

 private:
  std::string name_;
  std::vector<std::string> banned_;
  graph::Port clean_, network_;
};

void register_no_network(graph::Registry& registry) {
  graph::Contract c;
  c.kind = "example.no_network";
  c.summary = "Refuses candidates whose code names a network module or call (example plugin)";
  c.concurrency = graph::Concurrency::unlimited();
  c.requires_facets = {"candidates"};
  c.provides_facets = {"network_check"};
  c.ports = {{"clean", "no candidate names a banned word", false},
             {"network", "a candidate does (feedback says which)", true}};
  c.params = {graph::P::strings("banned", std::vector<std::string>{"socket", "requests", "urllib"},
                                "module and function names no candidate may use")};
  registry.add_stage(
      c, [](const graph::StageContext& ctx) { return std::make_unique<NoNetwork>(ctx); });
}

}  // namespace

VSYNTH_PLUGIN(register_no_network);
