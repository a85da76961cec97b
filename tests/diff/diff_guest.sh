#!/usr/bin/env bash
# The differential test against rsync (tests/diff/README.md) as an
# end-to-end guest script:
#   - //tests/diff:diff_tcp_host_test runs it through tests/e2e/host_test.sh,
#     over TCP on this host, in its own namespaces (E2E_TRANSPORT=tcp);
#   - tests/e2e/copy_guest.sh runs a few cases with it over RDMA in the rig
#     (copy_1vm_test), with DIFF_ARGS naming them.
#   diff_guest.sh RDCP RDCPD [GUEST_LIB [EVIL]]
# DIFF_ARGS: run.py's options (default: the self-test, then every supported
# case in every mode it supports with DIFF_SEEDS seeds, default 3).
set -u
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
py=/usr/bin/python3 # Debian's: no pip, no pyenv
[ -x "$py" ] || py=python3
transport=rdma
[ "${E2E_TRANSPORT:-rdma}" = tcp ] && transport=tcp
# shellcheck disable=SC2086 # DIFF_ARGS is a list of options
exec "$py" -B "$here/run.py" --rdcp "$1" --rdcpd "$2" --host "${RIG_SELF_IP:-127.0.0.1}" \
	--transport "$transport" ${DIFF_ARGS:---selftest --seeds ${DIFF_SEEDS:-3}}
