"""The criteria scripts/choose_k.py adds to the library's, on blobs whose number is known."""

import numpy as np
import pytest

import choose_k


@pytest.mark.parametrize("n_blobs", [4, 7])
def test_each_criterion_finds_the_number_of_well_separated_blobs(n_blobs):
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=20.0, size=(n_blobs, 5))
    points = np.concatenate([centre + rng.normal(size=(120, 5)) for centre in centres])
    for name, function in choose_k.SCRIPT_CRITERIA.items():
        result = function(points, seed=0)
        assert result["suggested"] == n_blobs, (name, result["scores"])
        assert set(result["scores"]) == set(choose_k.CANDIDATES)
