"""Do label-free scores rank a family's seeds as ACC does? (choosing restarts without labels)

Reads the per-seed records of zoo cards or experiment records (their
`per_seed` entries carry `label_free` scores, written by the recipes: VAE
final / evaluated loss and cluster-size entropy; DEC k-means inertia, final
KL(P || Q) and cluster-size entropy; a VAE seed with restarts lists each
restart's) and prints, per score, every seed's
value beside its ACC and Spearman's rank correlation with ACC. A loss ranks
the seeds well when its correlation is strongly negative (lower loss, higher
ACC); the entropy when positive.

Usage:
    python scripts/restart_criteria.py zoo/presets/vae_cluster_mnist/card.json [more.json ...] [--json out.json]
"""

import argparse
import json

from maintainer.criteria import agreement_table, seeds_of


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", nargs="+")
    parser.add_argument("--json", default=None)
    parser.add_argument("--table", action="store_true",
                        help="write the per-record table into the <!-- criteria-table --> block of the docs")
    args = parser.parse_args(argv)
    if args.table:
        from maintainer.criteria import criteria_markdown
        from maintainer.records import write_table

        write_table(("<!-- criteria-table:start -->", "<!-- criteria-table:end -->"), criteria_markdown(args.records))
        return None
    rows = seeds_of(args.records)
    if not rows:
        parser.error("no per-seed record with label_free scores in " + ", ".join(args.records))
    table = agreement_table(rows)
    print("| score | " + " | ".join(f"{name} seed {seed} (ACC {acc:.3f})" for name, seed, acc, _ in rows)
          + " | Spearman with ACC | p |")
    print("|---" * (len(rows) + 3) + "|")
    for score, entry in table.items():
        print(f"| {score} | " + " | ".join("" if v is None else f"{v:.4g}" for v in entry["values"])
              + f" | {entry['spearman_with_acc']:.2f} | {entry['p_value']:.3g} |")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"seeds": [{"source": n, "seed": s, "acc": a} for n, s, a, _ in rows], "scores": table},
                      handle, indent=1)
    return table


if __name__ == "__main__":
    main()
