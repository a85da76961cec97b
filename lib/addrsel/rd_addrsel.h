/* SPDX-License-Identifier: MIT */
/*
 * Which of a peer's addresses to try first: RFC 6724 destination address
 * selection, with the rules that need nothing beyond the kernel's route
 * lookup for a source address (a UDP connect, as glibc's getaddrinfo does):
 *   1  an address with no route goes last
 *   2  prefer a destination whose scope matches its source's
 *   5  prefer a destination whose label matches its source's
 *   6  prefer higher precedence (default policy table of RFC 6724 2.1:
 *      ::1 50, ::/0 40, IPv4 35, 2002::/16 30, 2001::/32 5, fc00::/7 3, ...)
 *   8  prefer the smaller scope
 *   9  prefer the longer prefix shared with the source (IPv6, up to /64)
 *   10 otherwise keep the given order.
 * So with the default table a global IPv6 address beats IPv4, and IPv4
 * beats a unique-local (fd00::/8) one. Rules 3, 4 and 7 (deprecated, home
 * and native addresses) need kernel state rdcp does not read.
 */
#ifndef RDCP_ADDRSEL_RD_ADDRSEL_H
#define RDCP_ADDRSEL_RD_ADDRSEL_H

#include <netinet/in.h>

/*
 * The source address the kernel would use towards dst (same family);
 * returns 0, or -1 when there is no route. The default does a UDP connect.
 */
typedef int (*rd_addrsel_src_fn)(void *ctx, const struct sockaddr_storage *dst,
				 struct sockaddr_storage *src);

/*
 * Reorder addrs[0..n) (numeric IPv4 or IPv6 strings, "fe80::1%eth0" too)
 * in place. family AF_INET or AF_INET6 first drops the other family (and
 * anything not numeric); 0 keeps both. Returns how many are left.
 * src NULL: the kernel's route lookup.
 */
int rd_addr_order(const char **addrs, int n, int family, rd_addrsel_src_fn src, void *ctx);

#endif
