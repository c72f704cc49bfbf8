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


class Layout(enum.IntEnum):
    """OpenVINO's layouts, with its numeric values."""

    ANY = 0
    NCHW = 1
    NHWC = 2
    NCDHW = 3
    NDHWC = 4
    OIHW = 64
    GOIHW = 65
    OIDHW = 66
    GOIDHW = 67
    SCALAR = 95
    C = 96
    CHW = 128
    HWC = 129
    HW = 192
    NC = 193
    CN = 194
    BLOCKED = 200


__all__ += ["Layout"]
