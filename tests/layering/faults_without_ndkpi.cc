// SPDX-License-Identifier: MIT
// Probe: ndksim/faults.h declares fault rules without pulling in the NDK interface (ndkpi.h), and
// still agrees with it when both are included, in either order.
#include "ndksim/faults.h"

#ifdef NDKSIM_NDKPI_H_
#error "ndksim/faults.h includes ndkpi.h"
#endif

#include "ndkpi.h"
#include "ndksim/faults.h"

ndksim::FaultRule Rule() { return ndksim::DropPackets().Times(1); }
