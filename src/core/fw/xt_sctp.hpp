// SPDX-License-Identifier: Apache-2.0
// The kernel's xt_sctp.h made includable from C++: it is written for C, using _Bool and defining
// a macro named `bytes`.
#pragma once

#define _Bool bool
#include <linux/netfilter/xt_sctp.h>
#undef _Bool
#undef bytes
