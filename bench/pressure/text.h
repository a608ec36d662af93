/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
#include "text-conf.h"
#define FPM 64
typedef unsigned textfn(unsigned);
extern const int mod_role[NMOD];
extern textfn *const mods[NMOD][FPM];
