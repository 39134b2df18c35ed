/* kopt's host emulation of the CUDA runtime (see kopt/host_cuda.h): a build
 * for `--arch host` finds this file instead of the toolkit's. */
#pragma once
#include <kopt/host_cuda.h>
