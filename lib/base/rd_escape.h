/* SPDX-License-Identifier: MIT */
/*
 * Make untrusted bytes (file names from a peer, remote stderr) safe to
 * print on a terminal: control characters, DEL, backslash and invalid
 * UTF-8 become \xNN / \n / \t escapes, so a name cannot move the cursor or
 * hide text (scp CVE-2019-6109 class).
 */
#ifndef RDCP_BASE_RD_ESCAPE_H
#define RDCP_BASE_RD_ESCAPE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Escape len bytes of src into dst (always NUL-terminated when dstlen > 0).
 * Returns the length the full escaped string needs (excluding NUL), like
 * snprintf, so truncation can be detected.
 */
size_t rd_escape(char *dst, size_t dstlen, const char *src, size_t len);

/*
 * Decode one UTF-8 sequence of at most n bytes: returns its length with
 * the code point in *cp, or 0 if it is not valid (overlong, surrogate,
 * out of range, truncated).
 */
size_t rd_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

#endif
