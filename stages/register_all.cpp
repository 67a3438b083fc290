#include "stages/register_all.h"

#include "stages/ast/register.h"
#include "stages/constraint/register.h"
#include "stages/context/register.h"
#include "stages/core/register.h"
#include "stages/generation/register.h"
#include "stages/grammar/register.h"
#include "stages/io/register.h"
#include "stages/python/register.h"
#include "stages/retrieval/register.h"
#include "stages/validation/register.h"

namespace vsynth::stages {

void register_all(graph::Registry& registry) {
  ast::register_stages(registry);
  constraint::register_stages(registry);
  context::register_stages(registry);
  core::register_stages(registry);
  generation::register_stages(registry);
  grammar::register_stages(registry);
  io::register_stages(registry);
  python::register_stages(registry);  // hook.python, in builds with Python
  retrieval::register_stages(registry);
  validation::register_stages(registry);
}

}  // namespace vsynth::stages
