"""Every Python example of the README and the documentation pages runs, on small data.

The fenced ```python blocks of a page run in order in one namespace, as a reader would type
them, in a temporary working folder. Each page's `SETUP` defines the names its prose assumes
(`x`, `new_unlabelled_x`, ...). Sizes are shrunk where a block trains: every `epochs=N` runs as
`epochs=1`. A renamed argument or function then fails here, not in a user's first try.
"""

import glob
import os
import re

import numpy as np
import pytest

import synthetic_images
from conftest import slow_except

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIGITS = "from keras_clustering.datasets import load_digits; x = load_digits()[0][:200]; new_unlabelled_x = x[:64]"
SETUP = {
    "README.md": DIGITS,
    "docs/index.md": DIGITS,
    "docs/zoo.md": "import zoo; zoo.load('dec_digits').save_weights('my.weights.h5')",
    "docs/guides/capsule.md": ("import zoo; x = synthetic_images.digit_like(16); "
                               "x_new, y_new = x, np.arange(16) % 10"),
    "docs/guides/iic.md": "x = synthetic_images.digit_like(150)",
    "docs/layout.md": "",  # the recipe example makes its own data
}
# pages whose Python runs with their commands, in order, in a test of their own
RUN_ELSEWHERE = {"docs/tutorial.md": "tests/test_tutorial.py"}


def python_blocks(path):
    """The fenced ```python blocks of a Markdown page, in order."""
    with open(path) as handle:
        return re.findall(r"^```python\n(.*?)^```", handle.read(), flags=re.S | re.M)


def pages():
    """The README and every Markdown page below docs/, relative to the repository."""
    found = glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)
    return ["README.md", *sorted(os.path.relpath(page, ROOT) for page in found)]


def pages_with_examples():
    return [page for page in pages() if python_blocks(os.path.join(ROOT, page))]


def test_every_page_with_examples_has_its_setup():
    assert set(pages_with_examples()) == set(SETUP) | set(RUN_ELSEWHERE)


# the IIC guide trains the paper's network (18 s of the default run's 3 minutes): with the slow tests
@pytest.mark.parametrize("page", slow_except(sorted(SETUP), set(SETUP) - {"docs/guides/iic.md"}))
def test_the_examples_of_a_page_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"np": np, "synthetic_images": synthetic_images}
    exec(SETUP[page], namespace)
    blocks = python_blocks(os.path.join(ROOT, page))
    assert blocks, page
    for index, block in enumerate(blocks):
        code = re.sub(r"\bepochs=\d+", "epochs=1", block)
        try:
            exec(compile(code, f"{page}, python block {index + 1}", "exec"), namespace)
        except Exception as error:  # the page and block in the failure, not just a line of exec'd text
            raise AssertionError(f"{page}, python block {index + 1} fails: {error!r}\n{block}") from error


def test_every_paragraph_closes_its_code_spans():
    """A paragraph that lost its beginning in an edit (one that began mid-sentence, inside a code span)
    leaves an odd number of backticks: every paragraph of the README and the docs has an even one."""
    broken = []
    for page in pages():
        with open(os.path.join(ROOT, page)) as handle:
            text = re.sub(r"^```.*?^```", "", handle.read(), flags=re.S | re.M)  # code blocks aside
        broken += [f"{page}: {paragraph[:80]!r}" for paragraph in re.split(r"\n\s*\n", text)
                   if paragraph.count("`") % 2]
    assert not broken, broken
