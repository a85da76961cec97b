"""The one strict warning list applied to every rdcp target."""

RDCP_COPTS = [
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wshadow",
    "-Wmissing-prototypes",
    "-Wstrict-prototypes",
    "-Wpointer-arith",
    "-Wformat=2",
    "-Wvla",
    "-Wundef",
    "-Wcast-qual",
    "-Wwrite-strings",
    "-Wno-unused-parameter",
    # Messages are deliberately truncated to fixed buffers.
    "-Wno-format-truncation",
    "-fno-strict-aliasing",
]

# The programs load only the shared libraries they use (libstdc++ and libm
# were loaded for nothing): fewer libraries, faster start (issue 14).
RDCP_LINKOPTS = ["-Wl,--as-needed"]

# Test code may use cmocka macros that trip a few of the above.
RDCP_TEST_COPTS = RDCP_COPTS + [
    "-Wno-missing-prototypes",
    "-Wno-cast-qual",
]
