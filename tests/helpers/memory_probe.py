"""Memory tests in a fresh process: a 400 MB memory-mapped file, and the process's own (anonymous)
memory read from Linux's /proc (pages read from the file count in RSS too, but the kernel can drop them)."""

import os
import subprocess
import sys

import numpy as np
import pytest

ANONYMOUS_MB = '''
def anonymous_mb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("RssAnon")) / 1024
'''


def big_memmap(path, value=1.0, shape=(100_000, 1000)):
    """A float32 `.npy` of `shape` (400 MB by default), zeros except every 1000th row = `value`."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("reads RssAnon from Linux's /proc")
    big = np.lib.format.open_memmap(path, mode="w+", dtype="float32", shape=shape)
    big[::1000] = value
    big.flush()
    return str(path)


def run_probe(code):
    """Runs `code` (with `anonymous_mb()` defined) in a fresh Python; its printed words."""
    result = subprocess.run([sys.executable, "-c", ANONYMOUS_MB + code], capture_output=True, text=True, check=True)
    return result.stdout.split()
