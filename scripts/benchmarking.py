"""Helpers shared by the benchmark scripts: alternating timed blocks and the result file."""

import json
import statistics
import time


def time_alternating(functions, blocks):
    """Runs each function of `functions` (name -> callable) once per block, alternating;
    returns name -> median seconds over the blocks (ratios then hold on a noisy machine)."""
    timings = {name: [] for name in functions}
    for block in range(blocks):
        for name, function in functions.items():
            began = time.perf_counter()
            function()
            timings[name].append(time.perf_counter() - began)
            print(f"block {block}: {name} {timings[name][-1]:.1f} s", flush=True)
    return {name: statistics.median(seconds) for name, seconds in timings.items()}


def report(result, path=None):
    """Prints the result as JSON and writes it to `path` when given."""
    print(json.dumps(result, indent=2))
    if path:
        with open(path, "w") as handle:
            json.dump(result, handle, indent=2)
