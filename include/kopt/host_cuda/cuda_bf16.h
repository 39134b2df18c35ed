/* kopt host emulation: the 16-bit float types are in kopt/host_cuda.h. */
#pragma once
#include <kopt/host_cuda.h>
