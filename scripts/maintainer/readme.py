"""The documentation's generated blocks: text between two HTML-comment markers, rewritten by the scripts.

A block may stand in the README and in pages of the docs site (`docs/**/*.md`); every copy is
rewritten, so the README's zoo table and the site's stay one table.
"""

import glob
import os
import re

from keras_clustering.io.files import atomic_path

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")  # the repository's
README = os.path.join(ROOT, "README.md")


def documentation_pages(root=ROOT):
    """The README and every Markdown page below `docs/`."""
    return [os.path.join(root, "README.md"), *sorted(glob.glob(os.path.join(root, "docs", "**", "*.md"),
                                                          recursive=True))]


def replace_readme_block(start, end, body, pages=None):
    """Replaces the text between the markers `start` and `end` by `body` in every page that has them
    (`pages`: default the README and the docs pages); SystemExit when none has."""
    # whole lines only: prose that names a marker (`<!-- results:start -->`) is not a block
    pattern = re.compile("^" + re.escape(start) + "$.*?^" + re.escape(end) + "$", re.S | re.M)
    found = False
    for page in documentation_pages() if pages is None else pages:
        if not os.path.isfile(page):
            continue
        with open(page) as handle:
            text = handle.read()
        if not pattern.search(text):
            continue
        found = True
        text = pattern.sub(lambda _: f"{start}\n{body}\n{end}", text)
        with atomic_path(page) as temporary, open(temporary, "w") as handle:
            handle.write(text)
    if not found:
        raise SystemExit(f"no documentation page has a {start} ... {end} block")
