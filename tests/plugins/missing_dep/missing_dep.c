#include "missing_dep.h"

__attribute__((visibility("default"))) int missing_dep_answer(void) {
  return 42;
}
