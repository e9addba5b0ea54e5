"""The fuzzers' mutation choices drawn from hypothesis, for the bounded fuzz properties in tests
(a failure then shrinks to the fewest, simplest choices)."""
from hypothesis import strategies as st

from fuzz.mutations import Choices


class DrawChoices(Choices):
    """Mutation choices drawn from hypothesis's `data` strategy."""

    def __init__(self, data):
        self.data = data

    def index(self, n: int) -> int:
        return self.data.draw(st.integers(0, n - 1)) if n > 1 else 0

    def blob(self, limit: int) -> bytes:
        return self.data.draw(st.binary(max_size=limit))
