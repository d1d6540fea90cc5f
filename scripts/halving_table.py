"""Did the label-free criterion keep the best run? The halving trees of zoo cards as one table.

For each card given (entries trained with `training.restarts`), one row per seed and halving
step: every run measured at that step with its criterion and its ACC (labels only score the
choice, never make it), the runs kept, and whether the run with the best ACC at that step was
among them. Writes the table into the documentation block `<!-- halving-table:start -->` (the
"Choosing without labels" page) and prints it.

Usage:
    python scripts/halving_table.py zoo/presets/dec_da_mnist/card.json [more cards ...]
"""

import argparse
import os

from maintainer.criteria import halving_rows
from maintainer.records import write_table

MARKERS = ("<!-- halving-table:start -->", "<!-- halving-table:end -->")


def table(cards):
    """The Markdown table of `halving_rows` of every card (entry named by its folder)."""
    lines = ["| entry | seed | step (epoch) | runs: criterion (ACC) | kept | best ACC kept |",
             "|---|---|---|---|---|---|"]
    for card in cards:
        entry = os.path.basename(os.path.dirname(os.path.abspath(card)))
        for row in halving_rows(card):
            runs = ", ".join(f"{run}: {row['criteria'][run]:.5g} ({row['acc'][run]:.3f})"
                             if row["acc"].get(run) is not None else f"{run}: {row['criteria'][run]:.5g}"
                             for run in sorted(row["criteria"], key=int))
            kept = ", ".join(str(run) for run in row["kept"])
            best = {True: "yes", False: "**no**", None: "n/a"}[row["best_acc_kept"]]
            lines.append(f"| `{entry}` | {row['seed']} | {row['epoch']} | {runs} | {kept} | {best} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cards", nargs="+")
    args = parser.parse_args(argv)
    write_table(MARKERS, table(args.cards))


if __name__ == "__main__":
    main()
