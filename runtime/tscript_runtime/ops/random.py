"""Random number generators: `Generator` objects (PyTorch's API over numpy's PCG64) and the
default one that `manual_seed` seeds."""
import numpy as np

DEFAULT_SEED = 67280421310721  # PyTorch's default CPU seed: runs are reproducible without a seed call


class Generator:
    """A random number generator, as `torch.Generator` (CPU only)."""

    def __init__(self, device="cpu"):
        if str(device).split(":")[0] != "cpu":
            raise RuntimeError(f"tscript runs on the CPU only; device '{device}' is not available")
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed) -> "Generator":
        seed = int(seed)
        if not -(2 ** 63) <= seed < 2 ** 64:
            raise RuntimeError(f"Overflow when unpacking long: seed {seed} does not fit in 64 bits")
        self._seed = seed % 2 ** 64
        self.np = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self) -> int:
        """Reseed from a non-deterministic source; returns the new seed."""
        self.manual_seed(int(np.random.SeedSequence().entropy) % 2 ** 63)
        return self._seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> dict:
        return {"seed": self._seed, "state": self.np.bit_generator.state}

    def set_state(self, state: dict) -> "Generator":
        self._seed = state["seed"]
        self.np.bit_generator.state = state["state"]
        return self

    def __repr__(self) -> str:
        return f"<tscript.Generator seed={self._seed}>"


default_generator = Generator()


def numpy_generator(g) -> np.random.Generator:
    """The numpy generator behind a Generator argument (None: the default one)."""
    return (g or default_generator).np
