// SPDX-License-Identifier: MIT
/*
 * rdcp's exit status from a status and where it happened (rdcp.h lists
 * the numbers; rsync.1's EXIT VALUES are the model). The same status
 * means different things at different stages: "not found" is a source,
 * destination or module that could not be selected (3) before files move,
 * here or in the server's answer to OPEN, and a file I/O error (11) once
 * they move; "permission denied" in the answer to OPEN is the server's
 * refusal (5), later a file I/O error.
 */
#include "cmd/rdcp/rdcp.h"
#include "lib/base/rd_err.h"
#include "lib/session/rd_session.h"

int rdcp_exit_for(int status, int stage, int by_signal)
{
	int refused = stage == RD_CL_OPEN; /* the server's answer to OPEN */

	switch (status < 0 ? -status : status) {
	case RD_OK:
		return RDCP_EXIT_OK;
	case RD_EUSAGE:
		return refused ? RDCP_EXIT_START : RDCP_EXIT_USAGE;
	case RD_EVERSION:
		return RDCP_EXIT_PROTOCOL;
	case RD_EPROTO:
		return RDCP_EXIT_STREAM;
	case RD_ENODEV:
		return RDCP_EXIT_NODEV;
	case RD_ECONN:
		return RDCP_EXIT_SOCKET;
	case RD_EAUTH:
	case RD_EBUSY: /* turned away for now (rsync: max connections reached) */
		return RDCP_EXIT_START;
	case RD_EREMOTE: /* the remote side failed: to start, or with no reason we know */
		return stage <= RD_CL_OPEN ? RDCP_EXIT_START : RDCP_EXIT_STREAM;
	case RD_EPARTIAL:
		return RDCP_EXIT_PARTIAL;
	case RD_ENOMEM:
		return refused ? RDCP_EXIT_START : RDCP_EXIT_NOMEM;
	case RD_ENOENT:
		return stage <= RD_CL_OPEN && stage != RD_CL_CONNECT ? RDCP_EXIT_SELECT
								     : RDCP_EXIT_FILEIO;
	case RD_EPERM:
	case RD_ENOSPC:
	case RD_ESYS:
		return refused ? RDCP_EXIT_START : RDCP_EXIT_FILEIO;
	case RD_ECORRUPT:
		return RDCP_EXIT_CORRUPT;
	case RD_ETIMEOUT:
		return stage == RD_CL_CONNECT ? RDCP_EXIT_CONTIMEOUT : RDCP_EXIT_TIMEOUT;
	case RD_EMEMLOCK:
		return RDCP_EXIT_MEMLOCK;
	case RD_ESTOPPED: /* ours (a signal), or the server shutting down */
		return by_signal ? RDCP_EXIT_SIGNAL : refused ? RDCP_EXIT_START : RDCP_EXIT_SOCKET;
	case RD_EVANISHED:
		return RDCP_EXIT_VANISHED;
	default:
		return RDCP_EXIT_FILEIO;
	}
}

int rdcp_exit_from_status(int status)
{
	return rdcp_exit_for(status, RD_CL_TRANSFER, 0);
}

/*
 * The status of a run in which entries failed (-RD_EPARTIAL): 23 when some
 * arrived, 24 when the only failures are vanished sources (rsync: 23 wins
 * over 24); when nothing arrived, the failure's own number: 3 a source not
 * found, 11 file I/O, 51 verification, ... (never "partial").
 */
int rdcp_exit_partial(const struct rdcp_tally *t)
{
	if (t->failed && t->failed == t->vanished)
		return RDCP_EXIT_VANISHED;
	if (t->ok || !t->failed)
		return RDCP_EXIT_PARTIAL;
	switch (t->first_status < 0 ? -t->first_status : t->first_status) {
	case RD_ENOENT:
		return RDCP_EXIT_SELECT;
	case RD_ECORRUPT:
		return RDCP_EXIT_CORRUPT;
	case RD_EPROTO:
		return RDCP_EXIT_STREAM;
	case RD_ENOMEM:
		return RDCP_EXIT_NOMEM;
	case RD_ESYS:
	case RD_EPERM:
	case RD_ENOSPC:
		return RDCP_EXIT_FILEIO;
	default:
		return RDCP_EXIT_PARTIAL;
	}
}
