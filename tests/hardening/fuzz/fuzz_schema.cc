// libFuzzer target: the op schema parser (loader/op_schema.cc), which reads
// text a plugin hands the host (ABI 1.1 op declarations). The whole input is
// the schema. Besides the sanitizers' findings, it checks what the parser
// promises:
//  - a refusal says where: "at column N: ..." with N inside the text (or one
//    past its end), or names the length limit;
//  - an accepted schema stays inside the limits, and its one spelling
//    (ToString) parses again to the same spelling and the same arguments;
//  - every argument it accepts has a name Python can pass by keyword: not a
//    keyword, not a dunder name (checked here against Python's own list).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "loader/op_schema.h"

namespace {

[[noreturn]] void Broken(const std::string& what, std::string_view text) {
  std::fprintf(stderr, "fuzz_schema: %s (schema of %zu bytes)\n", what.c_str(),
               text.size());
  std::abort();
}

void CheckRefusal(const std::string& error, std::string_view text) {
  if (error.rfind("the schema is ", 0) == 0) {
    if (text.size() <= torchferry::kMaxSchemaLength) {
      Broken("refused for its length but is short: " + error, text);
    }
    return;
  }
  unsigned long column = 0;
  if (std::sscanf(error.c_str(), "at column %lu: ", &column) != 1 ||
      column < 1 || column > text.size() + 1) {
    Broken("a refusal without a column inside the text: " + error, text);
  }
}

// keyword.kwlist of Python 3.9 - 3.13, less None, True and False.
bool IsPythonKeyword(std::string_view name) {
  static const char* const kKeywords[] = {
      "and",      "as",       "assert", "async", "await",  "break",  "class",
      "continue", "def",      "del",    "elif",  "else",   "except", "finally",
      "for",      "from",     "global", "if",    "import", "in",     "is",
      "lambda",   "nonlocal", "not",    "or",    "pass",   "raise",  "return",
      "try",      "while",    "with",   "yield"};
  for (const char* keyword : kKeywords) {
    if (name == keyword) return true;
  }
  return false;
}

bool IsDunder(std::string_view name) {
  return name.size() >= 2 && name.substr(0, 2) == "__" &&
         name.substr(name.size() - 2) == "__";
}

void CheckAccepted(const torchferry::OpSchema& s, std::string_view text) {
  using namespace torchferry;
  for (const SchemaArg& a : s.args) {
    if (IsPythonKeyword(a.name) || IsDunder(a.name)) {
      Broken("accepted an argument name Python cannot pass: " + a.name, text);
    }
  }
  if (s.args.size() > kMaxSchemaArgs || s.returns.size() > kMaxSchemaReturns ||
      s.name.empty() || s.name.size() > kMaxIdentifierLength) {
    Broken("accepted a schema outside the limits", text);
  }
  const std::string spelled = s.ToString();
  OpSchema again;
  std::string error;
  if (!ParseSchema(spelled, &again, &error)) {
    Broken("its own spelling does not parse: " + error + ": " + spelled, text);
  }
  if (again.ToString() != spelled || again.args.size() != s.args.size() ||
      again.returns.size() != s.returns.size()) {
    Broken("spelling is not a fixed point: " + spelled, text);
  }
  for (size_t i = 0; i < s.args.size(); ++i) {
    const SchemaArg &a = s.args[i], &b = again.args[i];
    if (a.name != b.name || a.type != b.type || a.optional != b.optional ||
        a.kwarg_only != b.kwarg_only || a.written != b.written ||
        a.has_default != b.has_default ||
        DefaultText(a.default_value) != DefaultText(b.default_value)) {
      Broken("argument " + a.name + " changed in its own spelling", text);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  torchferry::OpSchema schema;
  std::string error;
  if (torchferry::ParseSchema(text, &schema, &error)) {
    CheckAccepted(schema, text);
  } else {
    CheckRefusal(error, text);
  }
  return 0;
}
