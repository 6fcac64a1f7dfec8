/* edgec runtime identity: the ABI version these objects were compiled with (edgec_nn.h's
 * EDGEC_RUNTIME_ABI_VERSION), which every generated model's NAME_init() compares with its own: a build that links
 * one model against another edgec version's runtime objects finds out at init, not by wrong outputs. */
#include "edgec_nn.h"

const int32_t edgec_runtime_abi_version = EDGEC_RUNTIME_ABI_VERSION;
