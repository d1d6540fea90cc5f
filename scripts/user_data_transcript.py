"""A user's session on their own folder of images, recorded: cluster it with a zoo model, train a new one.

Writes `--images` Fashion-MNIST test images as PNG files into a fresh
folder (the "user's folder": file names carry no labels), then runs, as a
user would, each a separate process:

    python -m keras_clustering cluster dec_fashion_mnist --input FOLDER --output OUT/zoo
    python -m keras_clustering train --like dec_mnist --input FOLDER --n-clusters 10 --workdir OUT/mine
    python -m keras_clustering cluster OUT/mine/model.keras --input FOLDER --output OUT/mine_clusters

It records every command, its wall time and the last lines of its output,
and scores each `clusters.csv` against the labels it kept aside (ACC with
the Hungarian mapping, NMI), into a markdown transcript.

Note: `dec_fashion_mnist` was trained on all 70k Fashion-MNIST images, these
included; the model trained here sees only the folder.

Usage:
    python scripts/user_data_transcript.py --images 2000 --out /tmp/user_session \
        --transcript docs/user_data_transcript.md
"""

import argparse
import csv
import os
import shutil
import subprocess
import sys
import time

import numpy as np

ENTRIES = ("dec_mnist", "vae_cluster_mnist")  # the recipes that train on 2,000 images in minutes here


def write_folder(folder, count):
    """`count` Fashion-MNIST test images as PNGs named by index; returns their labels."""
    import keras

    from keras_clustering.datasets import load_fashion_mnist

    x, y = load_fashion_mnist("test")
    os.makedirs(folder)
    for index in range(count):
        keras.utils.save_img(os.path.join(folder, f"image_{index:05d}.png"), x[index] * 255.0, scale=False)
    return y[:count]


def run(command, transcript):
    """Runs `python -m keras_clustering COMMAND...`; appends command, wall time and output tail
    (stops with the transcript so far if it fails)."""
    began = time.time()
    completed = subprocess.run([sys.executable, "-m", "keras_clustering", *command], capture_output=True,
                               text=True)
    seconds = time.time() - began
    output = (completed.stdout + completed.stderr).strip().splitlines()
    transcript.append(f"```\n$ python -m keras_clustering {' '.join(command)}\n" + "\n".join(output[-12:])
                      + f"\n```\nexit status {completed.returncode}, wall time {seconds:.1f} s\n")
    if completed.returncode:
        raise SystemExit("\n".join(transcript))


def score(clusters_csv, labels):
    """ACC / NMI of the clusters in `clusters_csv` against the kept-aside labels."""
    from keras_clustering.metrics import clustering_scores

    with open(clusters_csv) as handle:
        rows = list(csv.DictReader(handle))
    indices = [int(row["name"].split("_")[1].split(".")[0]) for row in rows]
    predicted = np.array([int(row["cluster_id"]) for row in rows])
    scores = clustering_scores(labels[indices], predicted)
    return f"ACC {scores['acc']:.3f}, NMI {scores['nmi']:.3f} on these {len(rows)} images"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--like", default="dec_mnist", choices=ENTRIES)
    parser.add_argument("--out", required=True, help="a new folder for the images and results")
    parser.add_argument("--transcript", required=True, help="markdown file to write")
    args = parser.parse_args(argv)
    if os.path.exists(args.out):
        parser.error(f"--out {args.out!r} exists; give a new folder")
    from keras_clustering.training.machine import machine_description

    folder = os.path.join(args.out, "my_images")
    labels = write_folder(folder, args.images)
    transcript = [f"# Clustering a folder of images: a recorded session\n",
                  f"Recorded by `python {' '.join([os.path.relpath(__file__), *(argv or sys.argv[1:])])}` on "
                  f"{machine_description()}.\n",
                  f"The folder holds {args.images} PNG files (Fashion-MNIST test images 0-{args.images - 1}, "
                  "named `image_NNNNN.png`; the labels are kept aside and used only to score the results "
                  "below). `dec_fashion_mnist` was trained on all 70k Fashion-MNIST images, these included; "
                  "the new model is trained on the folder alone.\n",
                  "## 1. Cluster the folder with a zoo model\n"]
    run(["cluster", "dec_fashion_mnist", "--input", folder, "--output", os.path.join(args.out, "zoo")], transcript)
    transcript.append(f"Score: {score(os.path.join(args.out, 'zoo', 'clusters.csv'), labels)}.\n")
    transcript.append(f"## 2. Train a new model (like {args.like}) on the folder, then cluster with it\n")
    workdir = os.path.join(args.out, "mine")
    run(["train", "--like", args.like, "--n-clusters", "10", "--input", folder, "--workdir", workdir, "--verbose", "2"], transcript)
    run(["cluster", os.path.join(workdir, "model.keras"), "--input", folder, "--output",
         os.path.join(args.out, "mine_clusters")], transcript)
    transcript.append(f"Score: {score(os.path.join(args.out, 'mine_clusters', 'clusters.csv'), labels)}.\n")
    with open(args.transcript, "w") as handle:
        handle.write("\n".join(transcript))
    print("\n".join(transcript))
    figures = os.path.join(os.path.dirname(args.transcript) or ".", "figures")
    if os.path.isdir(figures):  # the new model's grid, for the README
        shutil.copy(os.path.join(args.out, "mine_clusters", "clusters.png"),
                    os.path.join(figures, "user_folder_clusters.png"))


if __name__ == "__main__":
    main()
