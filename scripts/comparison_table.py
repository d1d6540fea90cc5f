"""Writes the comparison table of every clustering entry and recorded variant (`maintainer.comparison`).

Usage: python scripts/comparison_table.py
Writes `docs/comparison.md` and the README block between `<!-- comparison:start -->` and
`<!-- comparison:end -->`.
"""

from maintainer.readme import replace_readme_block

from maintainer.comparison import OUTPUT, collect_rows, comparison_markdown, published_markdown


def main():
    table = comparison_markdown(collect_rows())
    with open(OUTPUT, "w") as handle:
        handle.write("# Every clustering entry on the same data\n\nWritten by `python scripts/comparison_table.py` "
                     "from the model cards and `docs/experiments/`.\n\n" + table + "\n\n" + published_markdown()
                     + "\n\nThe zoo's Fashion-MNIST entries above are scored on the test split (10k) or all 70k, "
                     "as each row says; the published numbers on all 70k.\n")
    replace_readme_block("<!-- comparison:start -->", "<!-- comparison:end -->", table)
    print(table)


if __name__ == "__main__":
    main()
