// DecodingHook: the resource interface (`hook`) a capability implements to act inside
// generate.llm's decoding loop (constraint's hook.z3_forward does) without either linking the
// other: generate.llm asks the resources named in its `hooks` for this interface.
//
//   resources:
//     z3: { use: hook.z3_forward, with: { max_backtracks: 16 } }
//   stages:
//     generate: { use: generate.llm, with: { model: coder, hooks: [z3] } }
//
// The resource is built once per run and shared; for every candidate generate.llm asks it for
// a fresh kernels::MaskHook (kernels/sampler/mask_hook.h: ban/allow tokens before each step,
// accept/reject/roll back/stop after it), used by one thread for that one sequence and then
// dropped. Hooks run in list order; the first verdict other than accept wins.
//
// A minimal hook that bans a word:
//
//   struct NoEval : kernels::MaskHook {
//     HookVerdict after_sample(const DecodeView& v, TokenId, std::string_view piece) override {
//       std::string t(v.text);  t += piece;
//       return t.find("eval(") == t.npos ? HookVerdict::accept() : HookVerdict::reject("eval");
//     }
//   };
//   struct NoEvalHook : DecodingHook {
//     std::unique_ptr<kernels::MaskHook> make(graph::Item&, const HookContext&) override {
//       return std::make_unique<NoEval>();
//     }
//   };
//   registry.add_resource({"hook.no_eval", "hook", "bans eval(", {}},
//                         [](const graph::ResourceContext&) { return
//                         std::make_shared<NoEvalHook>(); });
#pragma once

#include <memory>
#include <string_view>

#include "graph/item.h"
#include "graph/resource.h"
#include "kernels/sampler/mask_hook.h"
#include "kernels/tokenizer/tokenizer.h"

namespace vsynth::stages::facets {

// What a hook may want to know about the generation it joins. The views stay valid until the
// candidate's hook is dropped (generate.llm holds them while it works on the item).
struct HookContext {
  const kernels::Tokenizer& tokenizer;
  std::string_view prompt;    // the prompt text as rendered (special tokens spelled out)
  std::string_view language;  // "python", "c", ... (the task's or the stage's)
  std::string_view mode;      // "complete" or "instruct"
  int candidate = 0;          // 0-based within this attempt
  int attempt = 1;            // Item::attempt()

  // The program the candidate becomes, as generate.llm assembles it (generation/answer_program.h),
  // so that a hook checks the code a validator will run: in complete mode prefix + the
  // generated text + the suffix; in instruct mode the code in the answer (`extract_code`),
  // after `given_code` when the answer does not define `entry_point`.
  std::string_view prefix;       // complete: the text before the cursor
  std::string_view suffix;       // complete: the text after it ("" when none)
  std::string_view given_code;   // instruct: the code the task gave to complete ("" when none)
  std::string_view entry_point;  // the function the tests call ("" when the task names none)
  // instruct: the code in an answer (a view into it), the way generate.llm extracts it.
  std::string_view (*extract_code)(std::string_view answer, std::string_view language) = nullptr;
};

class DecodingHook : public graph::Resource {
 public:
  // A fresh hook for one candidate of `item`, or nullptr when this item needs none. Called on
  // generate.llm's worker thread while it holds the item (it may read the task and facets, and
  // add a facet of its own). Exceptions fail the item with the message.
  virtual std::unique_ptr<kernels::MaskHook> make(graph::Item& item, const HookContext& ctx) = 0;
};

}  // namespace vsynth::stages::facets
