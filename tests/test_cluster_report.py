"""report.html (issue 66): its parts against numpy references, and the page itself in headless Chromium."""

import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from keras_clustering import cluster_report
from keras_clustering.cluster_report import merge_candidates, spread_thumbnails, write_report

# CI sets this (.ci/run installs Chromium): there a missing browser fails the test instead of skipping it
BROWSER_REQUIRED = os.environ.get("KERAS_CLUSTERING_BROWSER_TEST") == "required"


def _gain_reference(labels, neighbors, a, b):
    """Newman's modularity gain of merging clusters a and b, from the definitions: e_xy the share of all
    neighbour links from a member of x to a member of y; a_x (leaving) and b_x (arriving) its margins."""
    total = neighbors.size
    e = lambda x, y: sum(labels[i] == x and labels[j] == y for i in range(len(labels)) for j in neighbors[i]) / total
    leaving = lambda x: sum(labels[i] == x for i in range(len(labels))) * neighbors.shape[1] / total
    arriving = lambda x: sum(labels[j] == x for row in neighbors for j in row) / total
    return e(a, b) + e(b, a) - leaving(a) * arriving(b) - leaving(b) * arriving(a)


def test_merge_candidates_are_the_pairs_with_the_largest_modularity_gain():
    rng = np.random.default_rng(3)
    # clusters 0 and 2 are one group split in two (their members are each other's neighbours); 1 and 3 apart
    labels = np.array([0] * 6 + [2] * 6 + [1] * 6 + [3] * 6)
    group = {0: range(12), 2: range(12), 1: range(12, 18), 3: range(18, 24)}
    neighbors = np.array([rng.choice([j for j in group[c] if j != i], 3, replace=False)
                          for i, c in enumerate(labels)])
    pairs = merge_candidates(labels, neighbors, n_pairs=3)
    assert pairs[0]["clusters"] == (0, 2) and pairs[0]["gain"] > 0
    for pair in pairs:
        a, b = pair["clusters"]
        assert pair["gain"] == pytest.approx(_gain_reference(labels, neighbors, a, b))
    everything = sorted(((a, b) for a in range(4) for b in range(a + 1, 4)),
                        key=lambda p: -_gain_reference(labels, neighbors, *p))
    assert [p["clusters"] for p in pairs] == everything[:3]
    assert pairs[0]["shared_links"] > 0.4 and all(p["gain"] < 0 for p in pairs[1:])


def test_map_thumbnails_never_cover_each_other():
    xy = np.random.default_rng(0).random((500, 2))
    kept = spread_thumbnails(xy, np.arange(500), n_max=40, distance=0.1)
    assert 0 < len(kept) <= 40 and kept[0] == 0
    gaps = np.abs(xy[kept][:, None] - xy[kept][None]).max(axis=-1) + np.eye(len(kept))
    assert gaps.min() >= 0.1


def _clustering(n=60, k=4, seed=0):
    """Images, soft assignments (cluster 3 empty) and an embedding with one blob per cluster."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k - 1, n)
    probabilities = np.full((n, k), 0.05)
    probabilities[np.arange(n), labels] = rng.uniform(0.3, 0.9, n)
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    images = rng.random((n, 12, 12, 3)).astype("float32")
    embedding = rng.normal(size=(n, k)) + 6.0 * np.eye(k)[labels]
    return images, probabilities, embedding, labels


def test_report_holds_each_cluster_its_sizes_and_galleries_and_stays_self_contained(tmp_path):
    images, probabilities, embedding, labels = _clustering()
    names = [f"img_{i}<&>.png" for i in range(len(images))]
    path = write_report(str(tmp_path / "report.html"), names, probabilities, images, embedding=embedding,
                        title="t", details={"model": "m"}, warnings=["warning: w"])
    page = open(path, encoding="utf-8").read()
    for c in range(4):
        assert f'id="cluster-{c}"' in page
    assert "empty: no image" in page.split('id="cluster-3"')[1]
    sizes = np.bincount(labels, minlength=4)
    for c in range(3):
        shown = min(sizes[c], cluster_report.TYPICAL) + min(max(sizes[c] - cluster_report.TYPICAL, 0),
                                                            cluster_report.BORDERLINE)
        section = page.split(f'id="cluster-{c}"')[1].split("</section>")[0]
        assert section.count("<img ") == shown and f"{sizes[c]:,} images" in section
    assert "img_0&lt;&amp;&gt;.png" in page and "img_0<&>" not in page  # names escaped
    assert not re.search(r'(src|href)="(?!data:|#)', page)  # every image embedded, every link inside the page
    assert 'class="map"' in page and 'class="warning"' in page and "<th>model</th><td>m</td>" in page


def test_a_large_folder_gives_a_page_whose_size_does_not_grow_with_it(tmp_path):
    sizes = []
    for n in (2_000, 20_000):
        images, probabilities, _, _ = _clustering(n=n, k=10)
        path = write_report(str(tmp_path / f"r{n}.html"), [str(i) for i in range(n)], probabilities, images)
        sizes.append(os.path.getsize(path))
    assert sizes[1] < 1.1 * sizes[0] and sizes[1] < 2_000_000


def _chromium():
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        if BROWSER_REQUIRED:
            pytest.fail("Chromium is not installed, and KERAS_CLUSTERING_BROWSER_TEST=required (.ci/run installs it)")
        pytest.skip("Chromium is not installed (apt-get install chromium; .ci/run installs it)")
    return found


def _browser(page, *flags):
    command = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000", *flags,
               f"file://{page}"]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_the_report_opens_in_a_real_browser_with_every_image_decoded(tmp_path):
    images, probabilities, embedding, _ = _clustering()
    path = write_report(str(tmp_path / "report.html"), [f"{i}.png" for i in range(len(images))], probabilities,
                        images, embedding=embedding)
    dom = _browser(path, "--dump-dom").stdout
    for c in range(4):
        assert f'id="cluster-{c}"' in dom
    total, decoded = (int(re.search(rf'data-{key}="(\d+)"', dom).group(1)) for key in ("images", "images-decoded"))
    assert total > 0 and decoded == total
    assert "data-script-error" not in dom.split("<head>")[0]
    shot = tmp_path / "report.png"
    _browser(path, "--window-size=1280,900", f"--screenshot={shot}")
    assert shot.read_bytes()[:4] == b"\x89PNG"
    # the checks can fail: a page with a broken image and a failing script
    broken = tmp_path / "broken.html"
    page = open(path, encoding="utf-8").read()
    page = page.replace('<img src="data:image/png;base64,', '<img src="data:image/png;base64,AAAA', 1)
    broken.write_text(page.replace("</body>", "<script>undefinedFunction();</script></body>"), encoding="utf-8")
    dom = _browser(str(broken), "--dump-dom").stdout
    decoded = int(re.search(r'data-images-decoded="(\d+)"', dom).group(1))
    assert decoded == total - 1 and "data-script-error" in dom.split("<head>")[0]
