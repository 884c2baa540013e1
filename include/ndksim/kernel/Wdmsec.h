/* SPDX-License-Identifier: MIT */
/* Wdmsec.h - the spelling some drivers include (Windows file names do not care about case). */
#include "wdmsec.h"
