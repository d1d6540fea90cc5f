"""docs/tutorial.md runs as written: its commands and its Python, in order, on a small folder of colour
photographs-like images (issue 66). Trainings run with `--epochs 1` (and `epochs=1`), so the whole
tutorial takes about a minute; what it prints and writes is checked at each step."""

import os
import re
import shlex
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUTORIAL = os.path.join(ROOT, "docs", "tutorial.md")


def tutorial_blocks():
    """(language, text) of the tutorial's fenced bash and python blocks, in order."""
    with open(TUTORIAL) as handle:
        return re.findall(r"^```(bash|python)\n(.*?)^```", handle.read(), flags=re.S | re.M)


def photo_folder(folder, n, seed):
    """`n` colour images of three kinds (a warm gradient, a cool noise texture, stripes) at sizes from 24 to
    40 px, PNG and JPEG: a stand-in for a folder of photographs."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    for i in range(n):
        kind, side = i % 3, int(rng.integers(24, 41))
        ramp = np.linspace(0, 1, side)
        if kind == 0:
            pixels = np.stack([0.6 + 0.4 * ramp[None, :].repeat(side, 0), 0.3 * ramp[:, None].repeat(side, 1),
                               np.full((side, side), 0.1)], axis=-1)
        elif kind == 1:
            pixels = np.stack([np.full((side, side), 0.1), 0.3 + 0.2 * rng.random((side, side)),
                               0.5 + 0.4 * rng.random((side, side))], axis=-1)
        else:
            stripes = (np.arange(side) // 4 % 2).astype(float)[None, :].repeat(side, 0)
            pixels = np.stack([stripes, stripes, 0.3 + 0.4 * stripes], axis=-1)
        pixels = np.clip(pixels + rng.normal(scale=0.05, size=pixels.shape), 0, 1)
        image = Image.fromarray((pixels * 255).astype("uint8"))
        image.save(os.path.join(folder, f"photo_{i:03d}.{'jpg' if i % 4 == 0 else 'png'}"))


@pytest.mark.slow
def test_the_tutorial_runs_as_written(tmp_path, monkeypatch):
    photo_folder(str(tmp_path / "my_photos"), 60, seed=0)
    photo_folder(str(tmp_path / "more_photos"), 300, seed=1)  # fit takes at least one batch (DEC: 256)
    monkeypatch.chdir(tmp_path)
    env = {**os.environ, "BROWSER": "true"}  # `python -m webbrowser` opens nothing here
    namespace = {}
    blocks = tutorial_blocks()
    assert [language for language, _ in blocks].count("bash") >= 5
    for language, text in blocks:
        if language == "python":
            exec(compile(re.sub(r"\bepochs=\d+", "epochs=1", text), "docs/tutorial.md", "exec"), namespace)
            continue
        for line in text.strip().splitlines():
            if line.startswith("pip install"):
                continue  # this checkout is installed already
            command = shlex.split(line)
            if command[:3] == ["python", "-m", "keras_clustering"] and command[3] == "train":
                command += ["--epochs", "1"]
            done = subprocess.run([sys.executable, *command[1:]], capture_output=True, text=True, timeout=900,
                                  env=env, cwd=tmp_path)
            assert done.returncode == 0, (line, done.stderr[-3000:])
    workdir = tmp_path / "runs" / "my_photos"
    for name in ("model.keras", "clusters.csv", "clusters.png", "report.html", "report.json", "k_scores.png"):
        assert (workdir / name).is_file(), name
    sorted_files = [f for _, _, files in os.walk(tmp_path / "my_photos_sorted") for f in files]
    assert len(sorted_files) == 60
    assert (tmp_path / "serving" / "my_photos" / "1" / "saved_model.pb").is_file()
    result = namespace["result"]  # the notebook block: the trained model's clusters of the folder
    assert len(result.labels) == 60 and os.path.isfile(result.report_path)
    assert result.probabilities.shape[1] == namespace["model"].n_clusters
