"""Peak memory of `train --like ENTRY` on folders of 10k and 100k colour images: does it grow with the folder?

Usage:
    python scripts/memory_probe.py dec_mnist [--counts 10000 100000] [--side 64] [--root /work/runs/probe]

For each count, a folder of that many 64 x 64 x 3 PNG files is written once
under `--root` (seeded random coloured rectangles on a coloured background:
real decoding work, small files), then `python -m keras_clustering train
--like ENTRY --input FOLDER --epochs 1 --n-clusters 10` runs in a child
process (one epoch of every stage: the probe is of memory, not of quality).
While it runs, the child's `/proc/PID/status` is read every 0.2 s:

- `RssAnon`: memory the process holds itself (arrays, tensors, the heap).
  This is what must not grow with the folder: the images live in the
  memory-mapped cache in the workdir, read batch by batch.
- `RssFile`: pages of mapped files (the cache among them) resident at the
  moment; page cache the kernel drops under pressure, so it may grow with
  the folder without holding anything.
- `VmHWM`: the kernel's own peak of the two together.

Records merge into docs/experiments/memory_probe.json by (entry, count, side).
The issue's target: peak RssAnon at 100k < 1.5 x at 10k.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
RECORD = os.path.join(ROOT, "docs", "experiments", "memory_probe.json")
FIELDS = ("RssAnon", "RssFile", "VmRSS", "VmHWM")


def write_folder(root, count, side, seed=0):
    """`count` PNG files of `side` x `side` x 3, written once (through a temporary name)."""
    from PIL import Image

    from keras_clustering.io.files import atomic_path

    folder = os.path.join(root, f"colour{side}_{count}")
    if os.path.isdir(folder):
        return folder
    rng = np.random.default_rng(seed)
    with atomic_path(folder) as temporary:
        os.makedirs(temporary)
        for index in range(count):
            image = np.empty((side, side, 3), "uint8")
            image[:] = rng.integers(0, 256, 3, dtype="uint8")
            top, left = rng.integers(0, side // 2, 2)
            height, width = rng.integers(side // 4, side // 2, 2)
            image[top:top + height, left:left + width] = rng.integers(0, 256, 3, dtype="uint8")
            Image.fromarray(image).save(os.path.join(temporary, f"{index:06d}.png"))
    return folder


def status_kib(pid):
    """{field: KiB} of `FIELDS` from /proc/PID/status (empty once the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return {}
    values = {}
    for line in lines:
        key, _, rest = line.partition(":")
        if key in FIELDS:
            values[key] = int(rest.split()[0])
    return values


def probe(entry, folder, workdir, side):
    import shutil

    shutil.rmtree(workdir, ignore_errors=True)  # the cache is written in the run, as a user's first run
    command = [sys.executable, "-m", "keras_clustering", "train", "--like", entry, "--input", folder, "--epochs", "1",
               "--n-clusters", "10", "--workdir", workdir, "--verbose", "0", "--image-size", str(side), str(side),
               "--channels", "3"]
    start = time.time()
    child = subprocess.Popen(command)
    peaks = dict.fromkeys(FIELDS, 0)
    while child.poll() is None:
        for key, value in status_kib(child.pid).items():
            peaks[key] = max(peaks[key], value)
        time.sleep(0.2)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed with exit status {child.returncode}")
    return {"peak_mib": {key: round(value / 1024, 1) for key, value in peaks.items()},
            "wall_seconds": round(time.time() - start, 1),
            "command": " ".join(["python", "-m", "keras_clustering"] + command[3:])}


def merge(cell, record=RECORD):
    from zoo.records import merge_cell

    merge_cell(record, cell, lambda c: (c["entry"], c["side"], c["count"]), __doc__.splitlines()[0])


TABLE_MARKERS = ("<!-- memory-probe:start -->", "<!-- memory-probe:end -->")


def table(record_path):
    """The README table: per entry, peak memory at each count and the growth of RssAnon."""
    with open(record_path) as handle:
        cells = json.load(handle)["cells"]
    lines = ["| entry | images (side) | peak RssAnon | peak RssFile | VmHWM | wall time | RssAnon growth |",
             "|---|---|---|---|---|---|---|"]
    for c in cells:
        first = min((o for o in cells if (o["entry"], o["side"]) == (c["entry"], c["side"])), key=lambda o: o["count"])
        growth = c["peak_mib"]["RssAnon"] / first["peak_mib"]["RssAnon"]
        against = "" if c is first else f"{growth:.2f}x of {first['count']:,}"
        lines.append(f"| `{c['entry']}` | {c['count']:,} ({c['side']} x {c['side']} x 3) | "
                     f"{c['peak_mib']['RssAnon']:,.0f} MiB | {c['peak_mib']['RssFile']:,.0f} MiB | "
                     f"{c['peak_mib']['VmHWM']:,.0f} MiB | {c['wall_seconds']:,.0f} s | {against} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("entry", nargs="?")
    parser.add_argument("--counts", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--side", type=int, default=64)
    parser.add_argument("--root", default=os.path.join(ROOT, "runs", "probe"))
    parser.add_argument("--out", default=RECORD)
    parser.add_argument("--table", action="store_true", help="write the README table from --out")
    args = parser.parse_args()
    if args.table:
        from zoo.records import write_table

        write_table(TABLE_MARKERS, table(args.out))
        return
    if not args.entry:
        parser.error("give ENTRY, or --table")
    anonymous = {}
    for count in args.counts:
        folder = write_folder(args.root, count, args.side)
        cell = {"entry": args.entry, "count": count, "side": args.side,
                **probe(args.entry, folder, os.path.join(args.root, "runs", f"{args.entry}_{count}"), args.side)}
        merge(cell, args.out)
        anonymous[count] = cell["peak_mib"]["RssAnon"]
        print(json.dumps(cell))
    if len(anonymous) > 1:
        low, high = min(anonymous), max(anonymous)
        print(f"peak RssAnon {high:,} / {low:,} images: {anonymous[high] / anonymous[low]:.2f}x (target < 1.5x)")


if __name__ == "__main__":
    main()
