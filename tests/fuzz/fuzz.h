/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The libFuzzer entry point each target defines; also driven by
 * fuzz-replay.c over the seed corpus when libFuzzer is not built. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
