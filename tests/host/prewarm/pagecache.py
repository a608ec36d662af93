#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# The page-cache side of the prewarm tests, from outside the daemon:
#   make FILE MIB          a file of MIB MiB of non-zero data, synced
#   evict FILE             posix_fadvise(DONTNEED) over all of it
#   resident FILE A B      "RESIDENT TOTAL": pages of [A, B) in the page cache (mincore)
#   run FILE TOUCH MARKER  map FILE executable, read one byte of each page
#                          of [0, TOUCH), write MARKER, then wait for a signal
import ctypes
import mmap
import os
import signal
import sys

PAGE = os.sysconf("SC_PAGE_SIZE")
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def make(path, mib):
    block = bytes((i * 7 + 1) % 251 + 1 for i in range(65536))
    with open(path, "wb") as f:
        for _ in range(mib * 16):
            f.write(block)
        f.flush()
        os.fsync(f.fileno())


def evict(path):
    fd = os.open(path, os.O_RDONLY)
    os.fdatasync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def resident(path, a, b):
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    b = min(b, size)
    start = a // PAGE * PAGE
    length = b - start
    n = (length + PAGE - 1) // PAGE
    addr = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, start)
    os.close(fd)
    if addr in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap")
    vec = ctypes.create_string_buffer(n)
    if libc.mincore(addr, length, vec) != 0:
        raise OSError(ctypes.get_errno(), "mincore")
    libc.munmap(addr, length)
    print(sum(1 for c in vec.raw if c & 1), n)


def run(path, touch, marker):
    fd = os.open(path, os.O_RDONLY)
    m = mmap.mmap(fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)
    total = 0
    for off in range(0, min(touch, len(m)), PAGE):
        total += m[off]
    with open(marker, "w") as f:
        f.write("%d\n" % total)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    while True:
        signal.pause()


cmd = sys.argv[1]
if cmd == "make":
    make(sys.argv[2], int(sys.argv[3]))
elif cmd == "evict":
    evict(sys.argv[2])
elif cmd == "resident":
    resident(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
elif cmd == "run":
    run(sys.argv[2], int(sys.argv[3]), sys.argv[4])
else:
    sys.exit("unknown command " + cmd)
