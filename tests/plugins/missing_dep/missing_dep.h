/* A function from a library the test plugin links but cannot find at run
   time. */
#ifndef TORCHFERRY_TESTS_MISSING_DEP_H_
#define TORCHFERRY_TESTS_MISSING_DEP_H_

int missing_dep_answer(void);

#endif /* TORCHFERRY_TESTS_MISSING_DEP_H_ */
