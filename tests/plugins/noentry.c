/* Broken: exports no entry symbol (everything is hidden). */
#include "synthetic.h"

const tf_plugin* not_the_entry(void);
const tf_plugin* not_the_entry(void) { return NULL; }
