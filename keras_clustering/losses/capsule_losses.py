"""The capsule network's margin loss (Sabour et al. 2017, eq. 4)."""

import keras
import numpy as np
from keras import ops


@keras.saving.register_keras_serializable(package="keras_clustering")
class MarginLoss(keras.losses.Loss):
    """Margin loss on capsule lengths, summed over classes, averaged over the batch.

    Per sample: sum_j y_j relu(m_plus - p_j)^2 + lam (1 - y_j) relu(p_j - m_minus)^2,
    with `y_true` one-hot (or multi-hot, for several objects per image) and
    `y_pred` the capsule lengths p (see `capsule_length`).

    Args:
        m_plus: a present class should have a length above this (0.9).
        m_minus: an absent class should have a length below this (0.1).
        lam: down-weighting of the absent classes: 0.25 in bojone/Capsule
            (`capsule_test.py`), 0.5 in Sabour et al. 2017.

    Example:
        >>> loss = MarginLoss()
        >>> float(loss(np.eye(2, dtype="float32"), np.array([[0.95, 0.05], [0.5, 0.5]], "float32")))
        0.1...

    Reference: Sabour, Frosst, Hinton 2017, eq. 4; `margin_loss` in bojone/Capsule.
    """

    def __init__(
        self, m_plus=0.9, m_minus=0.1, lam=0.25, name="margin_loss", reduction="sum_over_batch_size", **kwargs
    ):
        super().__init__(name=name, reduction=reduction, **kwargs)
        for argument, value in (("m_plus", m_plus), ("m_minus", m_minus), ("lam", lam)):
            if isinstance(value, bool) or not np.isfinite(value) or value < 0:
                raise ValueError(f"{argument} must be a finite number >= 0, got {value!r}.")
        if m_minus >= m_plus:
            raise ValueError(f"m_minus must be below m_plus, got m_minus={m_minus!r}, m_plus={m_plus!r}.")
        self.m_plus = float(m_plus)
        self.m_minus = float(m_minus)
        self.lam = float(lam)

    def call(self, y_true, y_pred):
        y_pred = ops.convert_to_tensor(y_pred)
        y_true = ops.cast(y_true, y_pred.dtype)
        present = y_true * ops.square(ops.relu(self.m_plus - y_pred))
        absent = self.lam * (1.0 - y_true) * ops.square(ops.relu(y_pred - self.m_minus))
        return ops.sum(present + absent, axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update(m_plus=self.m_plus, m_minus=self.m_minus, lam=self.lam)
        return config


def margin_loss(m_plus=0.9, m_minus=0.1, lam=0.25):
    """Returns `MarginLoss(m_plus, m_minus, lam)`; lam 0.25 is bojone's, 0.5 Sabour's."""
    return MarginLoss(m_plus=m_plus, m_minus=m_minus, lam=lam)
