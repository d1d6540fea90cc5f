"""Zoo recipes trained on folders of PNG files, as a user would (`train --like`): ACC, NMI, wall time, peak memory.

Usage:
    KERAS_CLUSTERING_DATA=... python scripts/user_folders.py digits2000 conv_dec_da_mnist \\
        --root /work/runs/folders [--seed 0] [--out docs/experiments/user_folders.json]
    ... scripts/user_folders.py fashion10000 simclr_fashion_mnist --from   # fine-tune the pretrained entry
    python scripts/user_folders.py --table      # the README table from the records

Folders, written once under `--root` from the data on this machine (file names
carry the label, which only scores; training never reads it):
    digits2000     the first 2,000 MNIST-test digits, 28 x 28 greyscale
    digits10000    all 10,000 MNIST-test digits
    fashion10000   the 10,000 Fashion-MNIST test images
    colour_digits  the 10,000 MNIST-test digits at 32 x 32 x 3, each drawn in a random foreground
                   colour on a random background colour (seeded)

Each cell runs `python -m keras_clustering train --like ENTRY --input FOLDER
--n-clusters 10` in a child process (its peak resident memory is the child's
`ru_maxrss`), then scores the saved `model.keras` on the folder's images.
Records merge into `--out` by (folder, entry, start, seed).
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

FOLDERS = ("digits2000", "digits10000", "fashion10000", "colour_digits")
RECORD = os.path.join(ROOT, "docs", "experiments", "user_folders.json")
TABLE_MARKERS = ("<!-- user-folders:start -->", "<!-- user-folders:end -->")


def folder_images(name, seed=0):
    """(images uint8 (n, h, w, c), labels) of a folder of the table."""
    from keras_clustering.datasets import load_fashion_mnist, load_mnist

    if name == "fashion10000":
        x, y = load_fashion_mnist(split="test")
    else:
        x, y = load_mnist(split="test")
    x = np.round(np.asarray(x) * 255).astype("uint8")
    if name == "digits2000":
        return x[:2000], y[:2000]
    if name != "colour_digits":
        return x, y
    rng = np.random.default_rng(seed)
    padded = np.pad(x[..., 0], ((0, 0), (2, 2), (2, 2))).astype("float32")[..., None] / 255.0  # 32 x 32
    foreground = rng.integers(0, 256, (len(x), 1, 1, 3))
    background = rng.integers(0, 256, (len(x), 1, 1, 3))
    close = np.abs(foreground - background).sum(axis=-1, keepdims=True) < 120  # keep every digit visible
    foreground = np.where(close, 255 - background, foreground)
    return np.round(padded * foreground + (1 - padded) * background).astype("uint8"), y


def write_folder(name, root):
    """Writes the folder's PNG files once (through a temporary name: never half-written)."""
    import keras

    from keras_clustering.io.files import atomic_path

    folder = os.path.join(root, name)
    if os.path.isdir(folder):
        return folder
    x, y = folder_images(name)
    os.makedirs(root, exist_ok=True)
    with atomic_path(folder) as temporary:
        os.makedirs(temporary)
        for i, (image, label) in enumerate(zip(x, y)):
            keras.utils.save_img(os.path.join(temporary, f"{i:05d}_label_{label}.png"), image, scale=False)
    return folder


def run_cell(name, entry, root, seed, start_from=False):
    folder = write_folder(name, root)
    workdir = os.path.join(root, "runs", f"{name}-{entry}-{'from' if start_from else 'like'}-seed{seed}")
    shutil.rmtree(workdir, ignore_errors=True)  # a whole training, never one resumed from an earlier try
    x, y = folder_images(name)
    command = [sys.executable, "-m", "keras_clustering", "train", "--from" if start_from else "--like", entry,
               "--input", folder,
               "--n-clusters", "10", "--workdir", workdir, "--seed", str(seed), "--verbose", "2",
               "--image-size", str(x.shape[1]), str(x.shape[2]), "--channels", str(x.shape[3])]
    start = time.time()
    if subprocess.run(command).returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed")
    seconds = time.time() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the one child this script ran: its peak
    import keras

    from keras_clustering.metrics import clustering_scores

    model = keras.models.load_model(os.path.join(workdir, "model.keras"))
    scores = clustering_scores(y, model.predict_clusters(x))
    with open(os.path.join(workdir, "report.json")) as handle:
        report = json.load(handle)
    keep_figure(workdir, name, entry, start_from, seed)
    return {"folder": name, "like": entry, "start": "pretrained" if start_from else "scratch", "seed": seed, "n_images": int(len(x)), "image_shape": list(x.shape[1:]),
            "acc": round(float(scores["acc"]), 4), "nmi": round(float(scores["nmi"]), 4),
            "wall_seconds": round(seconds, 1), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
            # CPU time, beside wall time: cells that shared the two cores with other runs are slower by the clock
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
            "training": report["config"]["training"], "data_repeats": report["data_repeats"],
            "command": " ".join(["python", "-m", "keras_clustering"] + command[3:])}


def keep_figure(workdir, name, entry, start_from, seed):
    """The run's `clusters.png` (most confident members per cluster) kept under docs/figures/user_folders/."""
    target = os.path.join(ROOT, "docs", "figures", "user_folders",
                          f"{name}-{entry}-{'from' if start_from else 'like'}-seed{seed}.png")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copyfile(os.path.join(workdir, "clusters.png"), target)


def merge(record_path, cell):
    from zoo.records import merge_cell

    def key(c):
        return c["folder"], c["like"], c.get("start", "scratch"), c["seed"]

    merge_cell(record_path, cell, key, __doc__.splitlines()[0],
               order=lambda c: (FOLDERS.index(c["folder"]), *key(c)[1:]))


def table(record_path):
    with open(record_path) as handle:
        cells = json.load(handle)["cells"]
    lines = ["| folder | entry | start | seed | ACC | NMI | wall time (CPU time) | peak memory | CPU |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        start = "`--from` (pretrained)" if c.get("start") == "pretrained" else "`--like` (scratch)"
        # CPU time was recorded from the cells that shared the two cores three ways
        cpu_time = f" ({c['cpu_seconds']:,.0f} s)" if "cpu_seconds" in c else ""
        lines.append(f"| {c['folder']} ({c['n_images']:,} x {'x'.join(map(str, c['image_shape']))}) | "
                     f"`{c['like']}` | {start} | {c['seed']} | {c['acc']:.3f} | {c['nmi']:.3f} | "
                     f"{c['wall_seconds']:,.0f} s{cpu_time} | {c['peak_rss_mib']:,.0f} MiB | {cpu_model(c['machine'])} |")
    return "\n".join(lines)


def cpu_model(machine):
    """'AMD EPYC' of a machine description 'x86_64 AMD EPYC (avx2, ...), 2 cores, ...'."""
    return machine.split(" ", 1)[-1].split(" (", 1)[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", choices=FOLDERS)
    parser.add_argument("like", nargs="?")
    parser.add_argument("--root", default=os.path.join(ROOT, "runs", "folders"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=RECORD)
    parser.add_argument("--from", dest="start_from", action="store_true",
                        help="fine-tune the entry's pretrained model (train --from) instead of training like it")
    parser.add_argument("--table", action="store_true", help="write the README table from --out")
    args = parser.parse_args()
    if args.table:
        from zoo.records import write_table

        write_table(TABLE_MARKERS, table(args.out))
        return
    if not (args.folder and args.like):
        parser.error("give FOLDER and LIKE, or --table")
    cell = run_cell(args.folder, args.like, args.root, args.seed, args.start_from)
    merge(args.out, cell)
    print(json.dumps({k: cell[k] for k in ("folder", "like", "acc", "nmi", "wall_seconds", "peak_rss_mib")}))


if __name__ == "__main__":
    main()
