/* edgec's TFLite resource variables (READ_VARIABLE, ASSIGN_VARIABLE), portable C99: the variable's int8 values
 * are the model's persistent state. Bit-exact with edgec/ops/variables.py. */
#include "edgec_nn_support.h"

void edgec_variable_read_s8(int32_t n, const int8_t *state, int8_t *output)
{
    int32_t i;
    for (i = 0; i < n; ++i) output[i] = state[i];
}

void edgec_variable_assign_s8(int32_t n, const int8_t *value, const int8_t *table, int8_t *state)
{
    int32_t i;
    for (i = 0; i < n; ++i) state[i] = table ? table[(int32_t)value[i] + 128] : value[i];
}
