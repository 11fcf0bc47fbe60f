#include "loader/op_schema.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace torchferry {
namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n'; }

// Python's keywords that [a-z_][a-z0-9_]* can spell (keyword.kwlist less
// None, True and False). Soft keywords (match, case, type, _) stay names.
constexpr std::string_view kPythonKeywords[] = {
    "and",      "as",       "assert", "async", "await",  "break",  "class",
    "continue", "def",      "del",    "elif",  "else",   "except", "finally",
    "for",      "from",     "global", "if",    "import", "in",     "is",
    "lambda",   "nonlocal", "not",    "or",    "pass",   "raise",  "return",
    "try",      "while",    "with",   "yield",
};

// A recursive-descent reader over the schema text. Every method either
// consumes what it names and returns true, or sets the error (the first one
// wins) and returns false.
class Parser {
 public:
  Parser(std::string_view text, std::string* error)
      : text_(text), error_(error) {}

  bool Parse(OpSchema* s) {
    SkipSpace();
    if (!Name(s)) return false;
    if (!Expect('(', "'(' after the op's name")) return false;
    if (!Args(s)) return false;
    SkipSpace();
    if (!Take("->")) return Fail("'->' and the op's returns");
    if (!Returns(s)) return false;
    SkipSpace();
    if (pos_ != text_.size()) return Fail("the end of the schema");
    return Check(s);
  }

 private:
  // The text from the current position, shortened, for "found ...".
  std::string Found() const {
    if (pos_ >= text_.size()) return "the end of the schema";
    size_t end = pos_;
    while (end < text_.size() && end - pos_ < 16 &&
           (IsIdentChar(text_[end]) || end == pos_)) {
      ++end;
    }
    std::string found;
    for (size_t i = pos_; i < end; ++i) {
      const unsigned char c = static_cast<unsigned char>(text_[i]);
      found += c >= 0x20 && c < 0x7f ? std::string(1, static_cast<char>(c))
                                     : fmt::format("\\x{:02x}", c);
    }
    return "'" + found + "'";
  }

  bool Fail(std::string_view expected) {
    return FailAt(pos_,
                  fmt::format("expected {}, found {}", expected, Found()));
  }
  bool FailAt(size_t pos, const std::string& what) {
    if (error_->empty())
      *error_ = fmt::format("at column {}: {}", pos + 1, what);
    return false;
  }

  void SkipSpace() {
    while (pos_ < text_.size() && IsSpace(text_[pos_])) ++pos_;
  }
  bool Peek(char c) {
    SkipSpace();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool Take(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  bool Expect(char c, std::string_view what) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return Fail(what);
  }

  bool Ident(std::string* out, std::string_view what) {
    SkipSpace();
    if (pos_ >= text_.size() || !IsIdentStart(text_[pos_])) {
      return Fail(fmt::format("{} ([a-z_][a-z0-9_]*)", what));
    }
    const size_t start = pos_;
    while (pos_ < text_.size() && IsIdentChar(text_[pos_])) ++pos_;
    if (pos_ - start > kMaxIdentifierLength) {
      return FailAt(start, fmt::format("{} is longer than {} characters", what,
                                       kMaxIdentifierLength));
    }
    *out = std::string(text_.substr(start, pos_ - start));
    return true;
  }

  bool Name(OpSchema* s) {
    std::string first;
    if (!Ident(&first, "the op's name")) return false;
    if (Take("::")) {
      s->ns = first;
      return Ident(&s->name, "the op's name after '::'");
    }
    s->name = first;
    return true;
  }

  // After `Tensor`: an optional (a) or (a!) annotation.
  bool Alias(char* alias, bool* written) {
    if (!Peek('(')) return true;
    ++pos_;
    SkipSpace();
    if (pos_ >= text_.size() || text_[pos_] < 'a' || text_[pos_] > 'z') {
      return Fail("an alias set letter a-z");
    }
    *alias = text_[pos_++];
    if (pos_ < text_.size() && text_[pos_] == '!') {
      *written = true;
      ++pos_;
    }
    return Expect(')', "')' closing the alias annotation");
  }

  bool Type(ArgType* type, bool* optional, char* alias, bool* written) {
    SkipSpace();
    const size_t start = pos_;
    std::string word;
    while (pos_ < text_.size() &&
           (IsIdentChar(text_[pos_]) ||
            (text_[pos_] >= 'A' && text_[pos_] <= 'Z'))) {
      word += text_[pos_++];
    }
    static constexpr const char* kTypes =
        "an argument type (Tensor, Tensor?, Tensor[], int, float, bool, "
        "Scalar)";
    if (word == "Tensor") {
      *type = ArgType::kTensor;
      if (!Alias(alias, written)) return false;
    } else if (word == "int") {
      *type = ArgType::kInt;
    } else if (word == "float") {
      *type = ArgType::kFloat;
    } else if (word == "bool") {
      *type = ArgType::kBool;
    } else if (word == "Scalar") {
      *type = ArgType::kScalar;
    } else {
      pos_ = start;
      return Fail(kTypes);
    }
    if (pos_ < text_.size() && text_[pos_] == '[') {
      if (*type != ArgType::kTensor || !Take("[]")) {
        return Fail("a type; lists are Tensor[] only");
      }
      if (*written) {
        return FailAt(start, "a Tensor[] cannot be written (no Tensor(a!)[])");
      }
      *type = ArgType::kTensorList;
    }
    if (pos_ < text_.size() && text_[pos_] == '?') {
      if (*type == ArgType::kTensorList) {
        return Fail("no '?' after Tensor[]; pass an empty list instead");
      }
      *optional = true;
      ++pos_;
    }
    return true;
  }

  bool Number(SchemaArg* a) {
    const size_t start = pos_;
    size_t end = pos_;
    if (end < text_.size() && (text_[end] == '-' || text_[end] == '+')) ++end;
    bool is_float = false;
    while (end < text_.size()) {
      const char c = text_[end];
      if (c >= '0' && c <= '9') {
        ++end;
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        ++end;
        if ((c == 'e' || c == 'E') && end < text_.size() &&
            (text_[end] == '-' || text_[end] == '+')) {
          ++end;
        }
      } else {
        break;
      }
    }
    const std::string literal(text_.substr(start, end - start));
    if (literal.empty() || literal == "-" || literal == "+") {
      return Fail("a default (None, True, False, an int or a float)");
    }
    errno = 0;
    char* stop = nullptr;
    if (is_float) {
      a->default_value.kind = SchemaDefault::kFloat;
      a->default_value.f = std::strtod(literal.c_str(), &stop);
    } else {
      a->default_value.kind = SchemaDefault::kInt;
      a->default_value.i = std::strtoll(literal.c_str(), &stop, 10);
    }
    if (stop != literal.c_str() + literal.size() || errno == ERANGE ||
        (is_float && !std::isfinite(a->default_value.f))) {
      return FailAt(start,
                    fmt::format("'{}' is not a number that fits {}", literal,
                                is_float ? "a float" : "int64"));
    }
    pos_ = end;
    return true;
  }

  bool Default(SchemaArg* a) {
    SkipSpace();
    const size_t start = pos_;
    a->has_default = true;
    if (Take("None")) {
      a->default_value.kind = SchemaDefault::kNone;
    } else if (Take("True") || Take("False")) {
      a->default_value.kind = SchemaDefault::kBool;
      a->default_value.i = text_[start] == 'T';
    } else if (!Number(a)) {
      return false;
    }
    // What the default may be, by the argument's type.
    const SchemaDefault::Kind k = a->default_value.kind;
    bool fits = false;
    switch (a->type) {
      case ArgType::kTensor:
      case ArgType::kTensorList:
        fits = k == SchemaDefault::kNone && a->optional;
        break;
      case ArgType::kInt:
        fits = k == SchemaDefault::kInt;
        break;
      case ArgType::kFloat:  // 1 for a float is 1.0, as in Python
        fits = k == SchemaDefault::kFloat || k == SchemaDefault::kInt;
        if (k == SchemaDefault::kInt) {
          a->default_value.kind = SchemaDefault::kFloat;
          a->default_value.f = static_cast<double>(a->default_value.i);
        }
        break;
      case ArgType::kBool:
        fits = k == SchemaDefault::kBool;
        break;
      case ArgType::kScalar:
        fits = k == SchemaDefault::kInt || k == SchemaDefault::kFloat;
        break;
    }
    if (k == SchemaDefault::kNone) fits = a->optional;
    if (!fits) {
      return FailAt(start, fmt::format("the default of '{}' does not fit its "
                                       "type {}{}",
                                       a->name, ArgTypeName(a->type),
                                       a->optional ? "?" : ""));
    }
    return true;
  }

  bool Args(OpSchema* s) {
    if (Peek(')')) {
      ++pos_;
      return true;
    }
    bool kwarg_only = false;
    while (true) {
      SkipSpace();
      const size_t start = pos_;
      if (Take("*")) {
        if (kwarg_only) return FailAt(start, "a second '*'");
        kwarg_only = true;
      } else {
        if (s->args.size() == kMaxSchemaArgs) {
          return FailAt(start,
                        fmt::format("more than {} arguments", kMaxSchemaArgs));
        }
        SchemaArg a;
        a.kwarg_only = kwarg_only;
        if (!Type(&a.type, &a.optional, &a.alias, &a.written)) return false;
        SkipSpace();
        const size_t name_at = pos_;
        if (!Ident(&a.name, "the argument's name")) return false;
        if (const std::string problem = PythonNameProblem(a.name);
            !problem.empty()) {
          return FailAt(name_at, fmt::format("the argument name '{}' {}; "
                                             "expected another name",
                                             a.name, problem));
        }
        if (s->FindArg(a.name) >= 0) {
          return FailAt(name_at,
                        fmt::format("a second argument called '{}'", a.name));
        }
        if (Peek('=')) {
          ++pos_;
          if (!Default(&a)) return false;
        } else if (!a.kwarg_only && !s->args.empty() &&
                   s->args.back().has_default && !s->args.back().kwarg_only) {
          return FailAt(name_at,
                        fmt::format("'{}' has no default but follows one "
                                    "that has; Python needs defaults last",
                                    a.name));
        }
        s->args.push_back(std::move(a));
      }
      if (Peek(')')) {
        ++pos_;
        break;
      }
      if (!Expect(',', "',' or ')' after an argument")) return false;
    }
    if (!s->args.empty() || kwarg_only) {
      if (kwarg_only && (s->args.empty() || !s->args.back().kwarg_only)) {
        return Fail("an argument after '*'");
      }
    }
    return true;
  }

  bool Return(OpSchema* s) {
    SkipSpace();
    const size_t start = pos_;
    if (s->returns.size() == kMaxSchemaReturns) {
      return FailAt(start,
                    fmt::format("more than {} returns", kMaxSchemaReturns));
    }
    ArgType type;
    bool optional = false, written = false;
    SchemaReturn r;
    if (!Type(&type, &optional, &r.alias, &written)) return false;
    if (type != ArgType::kTensor || optional) {
      return FailAt(start, "a return of type Tensor (ops return tensors only)");
    }
    if (r.alias != 0 && !written) {
      return FailAt(start,
                    "Tensor(x!) in a return; an op returns what it "
                    "wrote or a new tensor");
    }
    SkipSpace();
    if (pos_ < text_.size() && IsIdentStart(text_[pos_]) &&
        !Ident(&r.name, "the return's name")) {
      return false;
    }
    s->returns.push_back(std::move(r));
    return true;
  }

  bool Returns(OpSchema* s) {
    SkipSpace();
    if (Take("()")) return true;
    if (!Peek('(')) return Return(s);
    ++pos_;
    if (Peek(')')) {
      ++pos_;
      return true;
    }
    while (true) {
      if (!Return(s)) return false;
      if (Peek(')')) {
        ++pos_;
        return true;
      }
      if (!Expect(',', "',' or ')' after a return")) return false;
    }
  }

  // What holds across arguments and returns.
  bool Check(OpSchema* s) {
    for (const SchemaArg& a : s->args) {
      if ((a.name == "out" && !a.written) || a.name == "stream") {
        return FailAt(0, fmt::format("'{}' is an argument every op has; "
                                     "declare an output as "
                                     "'*, Tensor(a!) out' and returns as "
                                     "'-> Tensor(a!)'",
                                     a.name));
      }
      if (a.written && (a.optional || a.has_default)) {
        return FailAt(0, fmt::format("'{}' is written (Tensor(x!)): expected "
                                     "a Tensor without a default",
                                     a.name));
      }
    }
    for (size_t i = 0; i < s->args.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (s->args[i].alias != 0 && s->args[i].alias == s->args[j].alias) {
          return FailAt(0, fmt::format("'{}' and '{}' share alias set ({})",
                                       s->args[j].name, s->args[i].name,
                                       s->args[i].alias));
        }
      }
    }
    for (const SchemaReturn& r : s->returns) {
      if (r.alias == 0) continue;
      bool found = false;
      for (const SchemaArg& a : s->args)
        found |= a.is_out() && a.alias == r.alias;
      if (!found) {
        return FailAt(0, fmt::format("a return is Tensor({}!) but no "
                                     "argument after '*' is",
                                     r.alias));
      }
    }
    for (const SchemaArg& a : s->args) {
      if (!a.is_out()) continue;
      bool returned = false;
      for (const SchemaReturn& r : s->returns) returned |= r.alias == a.alias;
      if (!returned) {
        return FailAt(0, fmt::format("'{}' is written but not returned as "
                                     "Tensor({}!)",
                                     a.name, a.alias));
      }
    }
    return true;
  }

  std::string_view text_;
  std::string* error_;
  size_t pos_ = 0;
};

}  // namespace

const char* ArgTypeName(ArgType type) {
  switch (type) {
    case ArgType::kTensor:
      return "Tensor";
    case ArgType::kTensorList:
      return "Tensor[]";
    case ArgType::kInt:
      return "int";
    case ArgType::kFloat:
      return "float";
    case ArgType::kBool:
      return "bool";
    case ArgType::kScalar:
      return "Scalar";
  }
  return "?";
}

std::string PythonNameProblem(std::string_view name) {
  for (std::string_view keyword : kPythonKeywords) {
    if (name == keyword) {
      return "is a Python keyword, which Python code cannot write as a name";
    }
  }
  if (name.size() >= 2 && name.substr(0, 2) == "__" &&
      name.substr(name.size() - 2) == "__") {
    return "is a dunder name (__x__), which Python keeps for its own "
           "attributes";
  }
  return "";
}

std::string DefaultText(const SchemaDefault& value) {
  switch (value.kind) {
    case SchemaDefault::kNone:
      return "None";
    case SchemaDefault::kBool:
      return value.i ? "True" : "False";
    case SchemaDefault::kInt:
      return fmt::format("{}", value.i);
    case SchemaDefault::kFloat: {
      std::string text = fmt::format("{}", value.f);  // shortest round trip
      if (text.find_first_of(".en") == std::string::npos) text += ".0";
      return text;
    }
  }
  return "None";
}

std::string OpSchema::qualified_name() const {
  return ns.empty() ? name : ns + "::" + name;
}

int OpSchema::FindArg(std::string_view arg) const {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].name == arg) return static_cast<int>(i);
  }
  return -1;
}

int OpSchema::num_tensor_args() const {
  int n = 0;
  for (const SchemaArg& a : args) {
    n += !a.is_out() &&
         (a.type == ArgType::kTensor || a.type == ArgType::kTensorList);
  }
  return n;
}

std::string OpSchema::ToString() const {
  std::string text = qualified_name() + "(";
  bool star = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const SchemaArg& a = args[i];
    if (i > 0) text += ", ";
    if (a.kwarg_only && !star) {
      text += "*, ";
      star = true;
    }
    text += a.type == ArgType::kTensorList ? "Tensor" : ArgTypeName(a.type);
    if (a.alias != 0) {
      text += fmt::format("({}{})", a.alias, a.written ? "!" : "");
    }
    if (a.type == ArgType::kTensorList) text += "[]";
    if (a.optional) text += "?";
    text += " " + a.name;
    if (a.has_default) text += "=" + DefaultText(a.default_value);
  }
  text += ") -> ";
  auto one = [](const SchemaReturn& r) {
    std::string t = "Tensor";
    if (r.alias != 0) t += fmt::format("({}!)", r.alias);
    if (!r.name.empty()) t += " " + r.name;
    return t;
  };
  if (returns.size() == 1) return text + one(returns[0]);
  text += "(";
  for (size_t i = 0; i < returns.size(); ++i) {
    if (i > 0) text += ", ";
    text += one(returns[i]);
  }
  return text + ")";
}

bool ParseSchema(std::string_view text, OpSchema* schema, std::string* error) {
  *schema = OpSchema{};
  error->clear();
  if (text.size() > kMaxSchemaLength) {
    *error = fmt::format("the schema is {} characters long; at most {}",
                         text.size(), kMaxSchemaLength);
    return false;
  }
  Parser parser(text, error);
  if (parser.Parse(schema)) return true;
  if (error->empty()) *error = "the schema is malformed";
  return false;
}

}  // namespace torchferry
