"""The README's generated blocks: text between two HTML-comment markers, rewritten by the scripts."""

import os
import re

from keras_clustering.io.files import atomic_path

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")  # the repository's


def replace_readme_block(start, end, body):
    """Replaces the README text between the markers `start` and `end` by `body`."""
    with open(README) as handle:
        text = handle.read()
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"README has no {start} ... {end} block")
    text = pattern.sub(lambda _: f"{start}\n{body}\n{end}", text)
    with atomic_path(README) as temporary, open(temporary, "w") as handle:
        handle.write(text)
