// Which language a file is in when the task does not name it: editors send a prefix and a
// suffix with no file name (llama.vim, llama.vscode), sometimes a language id, and chunks of
// other files with their names.
//
//   language_for_name("typescriptreact")   // tsx: editor language ids and common aliases
//   language_from_paths({"a/b.py", "c.py", "d.go"})   // python: the extension most files have
//   detect_language("#!/usr/bin/env python3\nimport os\n")   // python
//
// detect_language is a cheap heuristic, not a classifier: a shebang decides at once (python,
// node -> javascript, ts-node/deno/bun -> typescript, sh is no language of ours); otherwise each
// line's start (after its indentation) is matched against a few markers per language
// ("def ", "package ", "#include", "fn ", "func ", "public class", ...), each line counts for
// the languages whose markers it starts with, and the language with the most lines wins when
// it has at least 2 of them and more than every other (else: none, an anonymous buffer). The
// same text always gives the same answer.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "stages/ast/language.h"

namespace vsynth::stages::ast {

// A canonical name (Language::find) or an editor's language id / alias ("py", "c++", "golang",
// "js", "javascriptreact", "ts", "typescriptreact", "rs"; case-insensitive); null if unknown.
const Language* language_for_name(std::string_view name);

// The language of the most paths (by extension); ties go to the one seen first; null when no
// path has a known extension.
const Language* language_from_paths(std::span<const std::string> paths);

// See above; null when the text does not say.
const Language* detect_language(std::string_view text);

}  // namespace vsynth::stages::ast
