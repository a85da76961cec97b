// SPDX-License-Identifier: MIT
/*
 * The work queue (lib/mpi/rd_mpi_wq.c) under mpirun: a synthetic tree of
 * items, each with 0..5 children by a hash of its path, to depth 9; every
 * item must be processed exactly once whatever the rank count (the sum
 * and the xor of the items' hashes match a walk on one rank), and with
 * more than one rank work must have been stolen.
 *   mpirun -np N wq_check [SEED]
 * Prints "wq_check: N items, M stolen, ok" on rank 0; exit 0 or 1.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mpi/rd_mpi_wq.h"

struct acc {
	uint64_t n, sum, xr, seed;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* item: u8 depth, u64 id */
static unsigned children(const struct acc *a, unsigned depth, uint64_t id)
{
	/* the top always branches: there is something to steal */
	if (depth < 2)
		return 4 + (unsigned)(mix(id ^ a->seed) % 2);
	return depth >= 9 ? 0 : (unsigned)(mix(id ^ a->seed) % 6);
}

static int visit(void *ctx, struct rd_wq *q, const void *item, size_t len)
{
	struct acc *a = ctx;
	uint8_t it[9];
	unsigned depth, k, n;
	uint64_t id;

	if (len != 9)
		return -1;
	memcpy(it, item, 9);
	depth = it[0];
	memcpy(&id, it + 1, 8);
	a->n++;
	a->sum += mix(id);
	a->xr ^= mix(id + 1);
	n = children(a, depth, id);
	for (k = 0; k < n; k++) {
		uint64_t c = id * 6 + k + 1;

		it[0] = (uint8_t)(depth + 1);
		memcpy(it + 1, &c, 8);
		if (rd_wq_push(q, it, 9))
			return -1;
	}
	return 0;
}

/* The same tree on one rank, depth first, with no queue. */
static void expect(struct acc *a, unsigned depth, uint64_t id)
{
	unsigned k, n = children(a, depth, id);

	a->n++;
	a->sum += mix(id);
	a->xr ^= mix(id + 1);
	for (k = 0; k < n; k++)
		expect(a, depth + 1, id * 6 + k + 1);
}

int main(int argc, char **argv)
{
	struct acc a = {0}, want = {0};
	struct rd_wq_stats st;
	uint64_t in[4], out[4];
	uint8_t root[9] = {0};
	const void *seeds[1] = {root};
	size_t lens[1] = {9};
	int rank, size, ret, ok;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	a.seed = want.seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 12345;
	ret = rd_wq_run(MPI_COMM_WORLD, visit, &a, rank ? NULL : seeds, lens, rank ? 0 : 1, &st);
	in[0] = a.n;
	in[1] = a.sum;
	in[2] = st.taken;
	in[3] = (uint64_t)(ret != 0);
	MPI_Reduce(in, out, 4, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
	{
		uint64_t x = a.xr, xo = 0;

		MPI_Reduce(&x, &xo, 1, MPI_UINT64_T, MPI_BXOR, 0, MPI_COMM_WORLD);
		a.xr = xo;
	}
	ok = 1;
	if (rank == 0) {
		expect(&want, 0, 0);
		ok = out[0] == want.n && out[1] == want.sum && a.xr == want.xr && !out[3] &&
		     (size == 1 || out[2] > 0);
		printf("wq_check: %d ranks: %llu items (want %llu), %llu stolen, %s\n", size,
		       (unsigned long long)out[0], (unsigned long long)want.n,
		       (unsigned long long)out[2], ok ? "ok" : "WRONG");
	}
	MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	MPI_Finalize();
	return ok ? 0 : 1;
}
