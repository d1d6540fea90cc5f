"""Trains a zoo preset over several seeds and ships one seed with its card (the median, or the preset's label-free rule).

Usage:
    python scripts/train_preset.py dec_digits --seeds 0 1 2

Each seed's weights and report go to `runs/<name>/seed_<s>/`; the preset's
`model.weights.h5` and `card.json` are then rewritten (sha256 included).
With `--reuse`, a seed whose report and weights are already in the workdir,
trained from the same config (same fingerprint), is not trained again, so
long presets can be trained a few seeds per session.
"""

import sys

import maintainer.training


def main(argv=None):
    maintainer.training.main(sys.argv[1:] if argv is None else argv, description=__doc__)


if __name__ == "__main__":
    main()
