/* SPDX-License-Identifier: MIT */
/*
 * The partials sweeper: a thread of its own (nice 19, idle I/O class)
 * that removes each writable module's partials older than its "partial
 * max age" (lib/sink/rd_sink_sweep.h), once when started and every
 * interval after, reading the configuration current at each round (a
 * reload applies at the next one). Sessions never wait for it: a partial
 * a session holds is skipped. Each removal is an RD_EV_PARTIAL line.
 */
#ifndef RDCP_DAEMON_RD_SWEEP_H
#define RDCP_DAEMON_RD_SWEEP_H

#include "lib/base/rd_err.h"
#include "lib/daemon/rd_daemon.h"

#define RD_SWEEP_INTERVAL_S 3600

struct rd_sweeper;

/*
 * Start sweeping the modules of cfg->conf (read with an atomic load each
 * round: whoever reloads stores the new one so), logging through cfg's
 * log/event callbacks. cfg must outlive the sweeper.
 */
int rd_sweeper_start(struct rd_sweeper **out, const struct rd_daemon_cfg *cfg, unsigned interval_s,
		     struct rd_err *err);
/* Stop (a walk in progress ends at its next directory entry) and join. Accepts NULL. */
void rd_sweeper_stop(struct rd_sweeper *s);

#endif
