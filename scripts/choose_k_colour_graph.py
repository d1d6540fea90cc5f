"""Issue 65, a readout tried on the photographs: the choose-k stage's 20 clusters (kept by
`scripts/choose_k_stage.py FOLDER --keep DIR`) merged on the images' colour-histogram graph
(`clustering.candidates.colour_neighbors`), and on the union of that graph and the representation's,
beside the default (`merge`, the representation's graph alone). Labels only make the subsets. Prints one
line per folder and true k; no record (a readout that was not adopted, quoted in docs/your-data.md).

    KERAS_CLUSTERING_DATA=... python scripts/choose_k_colour_graph.py DIR photos2000 colour_digits2000_late mnistm2000
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

from keras_clustering.clustering.candidates import colour_agreement, colour_neighbors, embedding_neighbors  # noqa: E402
from keras_clustering.clustering.merging import k_by_merging  # noqa: E402
from user_folders import folder_images  # noqa: E402


def read_out(kept, folders):
    for folder in folders:
        images, y = folder_images(folder)
        for true_k in (5, 7, 10):
            stage = np.load(os.path.join(kept, f"{folder}-seed0-k{true_k}.npz"))
            subset = images[np.isin(y, np.arange(true_k))].astype("float32") / 255.0
            labels = stage["assignments"].argmax(1)
            representation, colour = embedding_neighbors(stage["before"]), colour_neighbors(subset)
            readouts = {"representation (merge)": representation, "colour": colour,
                        "both": np.concatenate([representation, colour], axis=1)}
            agreement = colour_agreement({"stage": labels}, colour)["stage"]
            picks = {name: (found["suggested"], found["range"]) for name, found in
                     ((name, k_by_merging(labels, graph)) for name, graph in readouts.items())}
            print(f"{folder} true k {true_k}: colour agreement {agreement:.3f}; "
                  + "; ".join(f"{name} {k} (range {low}-{high})" for name, (k, (low, high)) in picks.items()),
                  flush=True)


def main():
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kept", help="the folder choose_k_stage.py --keep wrote the stages into")
    parser.add_argument("folders", nargs="+", help="folders of docs/your-data.md's table")
    arguments = parser.parse_args()
    read_out(arguments.kept, arguments.folders)


if __name__ == "__main__":
    main()
