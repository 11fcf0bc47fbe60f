// An op's signature as data: torch's schema language, parsed once.
//
//   rms_norm(Tensor input, Tensor weight, float eps=1e-06) -> Tensor
//   acme::fused_gelu(Tensor x, *, float approximate=0.0) -> Tensor
//   cast(Tensor input, *, Tensor(a!) out) -> Tensor(a!)
//
// The subset torchferry speaks: argument types Tensor, Tensor?, Tensor[],
// int, float, bool and Scalar (each but Tensor[] optional with `?`); `*`
// starts the keyword-only arguments; a default is None, True, False, an int
// or a float literal; `Tensor(a!)` marks an argument the op writes: after
// `*` an out=, which a return with the same annotation is; before `*` an
// input it updates in place, which no return names. The built-in ops
// (loader/op_table.h) and every op a plugin declares (ABI 1.1) go through the
// same parser, so a bad declaration is refused with the column it breaks at.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace torchferry {

enum class ArgType : uint8_t {
  kTensor,
  kTensorList,  // Tensor[]
  kInt,
  kFloat,
  kBool,
  kScalar,  // an int or a float, kept as the kernel's dtype asks
};

struct SchemaDefault {
  enum Kind : uint8_t { kNone, kInt, kFloat, kBool } kind = kNone;
  int64_t i = 0;  // kInt, and kBool as 0 or 1
  double f = 0;   // kFloat
};

struct SchemaArg {
  std::string name;
  ArgType type = ArgType::kTensor;
  bool optional = false;    // `?`: None is a value
  bool kwarg_only = false;  // after `*`
  bool written = false;     // Tensor(a!): the op writes it
  char alias = 0;           // the alias set letter of Tensor(a) / (a!), or 0
  bool has_default = false;
  SchemaDefault default_value;

  // Written after `*`: the op's out=, which it returns.
  bool is_out() const { return written && kwarg_only; }
  // Written before `*`: an input the op also updates in place (as
  // add_rms_norm's residual), never returned.
  bool in_place() const { return written && !kwarg_only; }
};

struct SchemaReturn {
  std::string name;  // may be empty
  char alias = 0;    // Tensor(a!) returns the argument with that letter
};

// Limits that keep every derived table small and every declaration bounded.
constexpr size_t kMaxSchemaLength = 1024;
constexpr size_t kMaxSchemaArgs = 16;
constexpr size_t kMaxSchemaReturns = 4;
// Tensors one call writes: its returns and its arguments written in place.
constexpr size_t kMaxOpOutputs = 8;
constexpr size_t kMaxIdentifierLength = 63;

struct OpSchema {
  std::string ns;    // "acme" for acme::fused_gelu; empty for built-in ops
  std::string name;  // "fused_gelu"
  std::vector<SchemaArg> args;
  std::vector<SchemaReturn> returns;

  // "acme::fused_gelu", or the name alone without a namespace.
  std::string qualified_name() const;
  // The schema in one spelling (one space after commas, floats as Python
  // prints them): two declarations are the same op when these agree.
  std::string ToString() const;
  // Index of the argument called `name`, or -1.
  int FindArg(std::string_view name) const;
  // Tensor and Tensor[] arguments but the out=.
  int num_tensor_args() const;
};

// Parses `text`; on failure returns false and sets `error` to what was
// expected and what was found, with the 1-based column, e.g.
//   "at column 17: expected an argument type (Tensor, Tensor?, Tensor[],
//    int, float, bool, Scalar), found 'Tensr'"
bool ParseSchema(std::string_view text, OpSchema* schema, std::string* error);

// The name part of a schema (up to '('), for tables that need only names.
constexpr std::string_view SchemaName(std::string_view text) {
  const size_t paren = text.find('(');
  return text.substr(0, paren == std::string_view::npos ? 0 : paren);
}

// Why `name`, an identifier of [a-z_][a-z0-9_]*, cannot be what Python code
// writes for a declared op's namespace, name or argument, or "" when it can.
// A keyword (lambda) is a SyntaxError as an attribute or a parameter
// (torchferry.ops.acme.lambda, def f(x, lambda)); a dunder name (__class__,
// __name__, __all__) is one every Python object or module already has.
std::string PythonNameProblem(std::string_view name);

// A default as Python writes it: None, True, 1, 1e-06, 0.5.
std::string DefaultText(const SchemaDefault& value);

const char* ArgTypeName(ArgType type);

}  // namespace torchferry
