// The schema parser: what it accepts, how it spells a schema back, and the
// column and words of every refusal. Plugin-declared ops go through the same
// parser, so each refusal here is a reason a plugin would be skipped with.
#include "loader/op_schema.h"

#include <catch2/catch.hpp>
#include <string>

#include "loader/op_table.h"

using namespace torchferry;

namespace {

OpSchema Parsed(const std::string& text) {
  OpSchema s;
  std::string error;
  INFO(text);
  REQUIRE(ParseSchema(text, &s, &error));
  CHECK(error.empty());
  return s;
}

std::string Refusal(const std::string& text) {
  OpSchema s;
  std::string error;
  INFO(text);
  CHECK_FALSE(ParseSchema(text, &s, &error));
  CHECK_FALSE(error.empty());
  return error;
}

}  // namespace

TEST_CASE("a schema parses into arguments and returns", "[schema]") {
  OpSchema s = Parsed(
      "acme::fused_gelu(Tensor x, Tensor? bias=None, *, float a=1, "
      "int dim=-1, bool exact=True, Scalar s=0.5) -> Tensor");
  CHECK(s.ns == "acme");
  CHECK(s.name == "fused_gelu");
  CHECK(s.qualified_name() == "acme::fused_gelu");
  REQUIRE(s.args.size() == 6);
  CHECK(s.args[0].type == ArgType::kTensor);
  CHECK_FALSE(s.args[0].has_default);
  CHECK(s.args[1].optional);
  CHECK(s.args[1].default_value.kind == SchemaDefault::kNone);
  CHECK(s.args[2].kwarg_only);
  CHECK(s.args[2].default_value.kind == SchemaDefault::kFloat);  // 1 -> 1.0
  CHECK(s.args[2].default_value.f == 1.0);
  CHECK(s.args[3].default_value.i == -1);
  CHECK(s.args[4].default_value.kind == SchemaDefault::kBool);
  CHECK(s.args[4].default_value.i == 1);
  CHECK(s.args[5].default_value.f == 0.5);
  CHECK(s.returns.size() == 1);
  CHECK(s.num_tensor_args() == 2);
  CHECK(s.ToString() ==
        "acme::fused_gelu(Tensor x, Tensor? bias=None, *, float a=1.0, "
        "int dim=-1, bool exact=True, Scalar s=0.5) -> Tensor");
}

TEST_CASE("ToString is a fixed point and ignores spacing", "[schema]") {
  const OpSchema a =
      Parsed("f( Tensor  x,Tensor[] ys ,float eps=1e-06)->Tensor");
  const OpSchema b = Parsed(a.ToString());
  CHECK(a.ToString() == b.ToString());
  CHECK(a.ToString() == "f(Tensor x, Tensor[] ys, float eps=1e-06) -> Tensor");
}

TEST_CASE("written outputs and their returns", "[schema]") {
  OpSchema s = Parsed("cast(Tensor input, *, Tensor(a!) out) -> Tensor(a!)");
  CHECK(s.args[1].written);
  CHECK(s.args[1].alias == 'a');
  CHECK(s.returns[0].alias == 'a');
  CHECK(s.num_tensor_args() == 1);
  CHECK(s.args[1].is_out());
  CHECK_FALSE(s.args[1].in_place());
  // Before '*': an input the op updates in place, counted as an input.
  OpSchema in_place = Parsed(
      "add_rms_norm(Tensor input, Tensor(a!) residual, Tensor weight) -> "
      "Tensor");
  CHECK(in_place.args[1].in_place());
  CHECK_FALSE(in_place.args[1].is_out());
  CHECK(in_place.num_tensor_args() == 3);
  CHECK(Parsed(in_place.ToString()).ToString() == in_place.ToString());
  OpSchema none = Parsed("noop(Tensor[] tensors) -> ()");
  CHECK(none.returns.empty());
  OpSchema two =
      Parsed("topk(Tensor x, int k) -> (Tensor values, Tensor indices)");
  REQUIRE(two.returns.size() == 2);
  CHECK(two.returns[1].name == "indices");
}

TEST_CASE("a refusal names the column and what was expected", "[schema]") {
  CHECK(Refusal("f(Tensr x) -> Tensor") ==
        "at column 3: expected an argument type (Tensor, Tensor?, Tensor[], "
        "int, float, bool, Scalar), found 'Tensr'");
  CHECK(Refusal("f(Tensor x -> Tensor") ==
        "at column 12: expected ',' or ')' after an argument, found '-'");
  CHECK(Refusal("F(Tensor x) -> Tensor") ==
        "at column 1: expected the op's name ([a-z_][a-z0-9_]*), found 'F'");
  CHECK(Refusal("f(Tensor x)") ==
        "at column 12: expected '->' and the op's returns, found the end of "
        "the schema");
  CHECK(Refusal("f(Tensor x, Tensor x) -> Tensor") ==
        "at column 20: a second argument called 'x'");
  CHECK(Refusal("f(int k=1.5) -> Tensor") ==
        "at column 9: the default of 'k' does not fit its type int");
  CHECK(Refusal("f(Tensor x=None) -> Tensor") ==
        "at column 12: the default of 'x' does not fit its type Tensor");
  CHECK(Refusal("f(int k=99999999999999999999) -> Tensor") ==
        "at column 9: '99999999999999999999' is not a number that fits int64");
  CHECK(Refusal("f(float a=1e999) -> Tensor") ==
        "at column 11: '1e999' is not a number that fits a float");
  CHECK(Refusal("f(int a=1, Tensor x) -> Tensor") ==
        "at column 19: 'x' has no default but follows one that has; Python "
        "needs defaults last");
  CHECK(Refusal("f(Tensor x, *) -> Tensor").find("an argument after '*'") !=
        std::string::npos);
  CHECK(Refusal("f(Tensor x, *, *, int k) -> Tensor") ==
        "at column 16: a second '*'");
  CHECK(Refusal("f(int[] x) -> Tensor") ==
        "at column 6: expected a type; lists are Tensor[] only, found '['");
  CHECK(Refusal("f(Tensor[]? x) -> Tensor") ==
        "at column 11: expected no '?' after Tensor[]; pass an empty list "
        "instead, found '?'");
  CHECK(Refusal("f(Tensor x) -> int") ==
        "at column 16: a return of type Tensor (ops return tensors only)");
  CHECK(Refusal("f(Tensor x) -> Tensor extra junk") ==
        "at column 29: expected the end of the schema, found 'junk'");
}

TEST_CASE("out and stream belong to every op", "[schema]") {
  CHECK(Refusal("f(Tensor x, Tensor stream) -> Tensor")
            .find("'stream' is an argument every op has") != std::string::npos);
  CHECK(Refusal("f(Tensor x, *, Tensor out) -> Tensor")
            .find("'out' is an argument every op has") != std::string::npos);
  // Written before '*' is an input updated in place, which no return names.
  CHECK(Refusal("f(Tensor x, Tensor(a!) out) -> Tensor(a!)")
            .find("a return is Tensor(a!) but no argument after '*' is") !=
        std::string::npos);
  CHECK(Refusal("f(Tensor x, Tensor(a!)? y) -> Tensor")
            .find("'y' is written (Tensor(x!)): expected a Tensor without a "
                  "default") != std::string::npos);
  CHECK(Refusal("f(Tensor x, *, Tensor(a!) out) -> Tensor")
            .find("'out' is written but not returned") != std::string::npos);
  CHECK(Refusal("f(Tensor x) -> Tensor(b!)")
            .find("a return is Tensor(b!) but no argument after '*' is") !=
        std::string::npos);
}

TEST_CASE("argument names are ones Python can spell", "[schema]") {
  // Keyword and dunder op and namespace names are refused where a plugin's
  // declarations are validated (tests/loader/validate_test.cc).
  CHECK(Refusal("acme::f(Tensor x, *, float lambda=1.0) -> Tensor")
            .find("the argument name 'lambda' is a Python keyword") !=
        std::string::npos);
  CHECK(Refusal("acme::f(Tensor x, int if) -> Tensor")
            .find("the argument name 'if' is a Python keyword") !=
        std::string::npos);
  // Soft keywords, builtins and names that merely contain a keyword are
  // names like any other; so are the ones the host uses inside.
  Parsed(
      "acme::match(Tensor x, *, float type=1.0, int case=0, bool lambda_=True, "
      "float _op=0.0, float _call=0.0, float iff=0.0, int print=0) -> Tensor");
  // A return's name is never spelled in Python.
  Parsed("acme::f(Tensor x) -> Tensor lambda");
}

TEST_CASE("limits bound every declaration", "[schema]") {
  std::string many = "f(";
  for (int i = 0; i < 17; ++i)
    many += (i ? ", int a" : "int a") + std::to_string(i);
  CHECK(Refusal(many + ") -> Tensor").find("more than 16 arguments") !=
        std::string::npos);
  CHECK(Refusal(std::string(2000, 'a')) ==
        "the schema is 2000 characters long; at most 1024");
  CHECK(Refusal("f" + std::string(70, 'x') + "() -> Tensor")
            .find("is longer than 63 characters") != std::string::npos);
  CHECK(Refusal(std::string("f(Tensor x)\0 -> Tensor", 22))
            .find("found '\\x00'") != std::string::npos);
  CHECK(Refusal("") ==
        "at column 1: expected the op's name ([a-z_][a-z0-9_]*), found the "
        "end of the schema");
}

TEST_CASE("every built-in op's schema parses and names its entry", "[schema]") {
  for (size_t i = 0; i < kNumOps; ++i) {
    const OpSchema s = Parsed(std::string(kOpTable[i].schema));
    CHECK(s.qualified_name() == OpName(static_cast<OpId>(i)));
    CHECK(s.ns.empty());
    CHECK(OpIndex(s.name) == static_cast<int>(i));
    CHECK_FALSE(kOpTable[i].doc.empty());
    CHECK_FALSE(kOpTable[i].contract.empty());
  }
  static_assert(OpIndex("noop") >= 0 &&
                OpIndex("noop") < static_cast<int>(kNumOps));
  static_assert(static_cast<int>(OpOf("abs")) == 0);
  CHECK(OpIndex("no_such_op") == -1);
}

TEST_CASE("an argument name is one Python can pass by keyword", "[schema]") {
  CHECK(Refusal("f(Tensor x, float lambda=1.0) -> Tensor") ==
        "at column 19: the argument name 'lambda' is a Python keyword, which "
        "Python code cannot write as a name; expected another name");
  CHECK(Refusal("f(Tensor x, *, int __debug__=0) -> Tensor")
            .find("the argument name '__debug__' is a dunder name") !=
        std::string::npos);
  CHECK(
      Refusal("f(Tensor from) -> Tensor").find("'from' is a Python keyword") !=
      std::string::npos);
  OpSchema s;
  std::string error;
  CHECK(ParseSchema("f(Tensor x, int match=0, int _=1) -> Tensor", &s, &error));
}
