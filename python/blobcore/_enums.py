"""NeoML's seven named dims."""

import enum


class Dim(enum.IntEnum):
    """A named dim (``b.dim(bc.Dim.CHANNELS)``; also accepted as an axis)."""

    BATCH_LENGTH = 0
    BATCH_WIDTH = 1
    LIST_SIZE = 2
    HEIGHT = 3
    WIDTH = 4
    DEPTH = 5
    CHANNELS = 6


__all__ = ["Dim"]
