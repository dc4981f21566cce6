// kiln device tile library: everything a generated kernel includes.
#pragma once

#include "kiln/types.cuh"
#include "kiln/math.cuh"
#include "kiln/quant.cuh"
#include "kiln/random.cuh"
#include "kiln/reduce.cuh"
#include "kiln/mma.cuh"
#include "kiln/wgmma.cuh"
