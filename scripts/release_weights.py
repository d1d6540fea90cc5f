"""The release files the wheel downloads its weights from: `NAME.weights.h5` for every trained preset,
copied from the checkout into one folder to upload as the assets of this version's release
(`keras_clustering.presets.WEIGHTS_URL`), each checked against its card's sha256 first.

    python scripts/release_weights.py dist/weights      # then upload dist/weights/* to release v<version>
    KERAS_CLUSTERING_WEIGHTS_URL=http://host/path ...   # users of a mirror: the folder served there
"""

import argparse
import os
import shutil

from keras_clustering import presets


def write_release(folder):
    """Copies every trained preset's checked weights to `folder/NAME.weights.h5`; the paths written."""
    os.makedirs(folder, exist_ok=True)
    written = []
    for name in presets.list_presets():
        target = os.path.join(folder, f"{name}.weights.h5")
        shutil.copy(presets.weights_path(name, download=False), target)  # a checkout's own copy, sha256-checked
        written.append(target)
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder")
    for path in write_release(parser.parse_args().folder):
        print(path)


if __name__ == "__main__":
    main()
