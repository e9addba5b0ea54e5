"""Seeded test data shared by test files: `Seeded(seed).randn` draws from a generator that an
autouse fixture (`Seeded.fixture()`) restarts before every test, so each test sees the same data
however many examples earlier (hypothesis) tests drew."""
import numpy as np
import pytest


def f32(values):
    return np.array(values, np.float32)


class Seeded:
    """A restartable standard-normal source."""

    def __init__(self, seed: int):
        self.seed, self.rng = seed, np.random.default_rng(seed)

    def randn(self, *shape, dtype=np.float32):
        return self.rng.standard_normal(shape).astype(dtype)

    def fixture(self):
        """An autouse fixture restarting the generator; assign it to a name in the test module."""
        @pytest.fixture(autouse=True)
        def fresh_rng():
            self.rng = np.random.default_rng(self.seed)
        return fresh_rng
