"""Random sequences of views and writes against a NumPy mirror.

One blob's memory is reached through many doors at once: blob views of
every kind (integer and slice keys with any step, ``.T``, windows,
regions), NumPy arrays of blob views (``np.asarray``, ``memoryview``,
``b.numpy()``, ``np.from_dlpack``), blobs wrapping those arrays again
(``bc.asblob``, ``bc.from_dlpack``), out-of-band pickles (protocol 5)
and, for a root in shared memory, a second map of its file at another
address (``bc.from_shared_fd``). Every blob is paired with the NumPy
view of a mirror array that the same keys give. Writes go through any
door (``b[key] = v`` with a number or a blob, ``fill``, ``copy_from``,
``add``, ``scale``, ``copy_to``, NumPy writes into an exported array)
and the same write is made to the mirror; after every step each blob
and array must read as its mirror, and ``shares_memory`` must agree
with NumPy's. A write that blobcore refuses must raise a ``BlobError``
(none but the documented refusals of blocked layouts happen) and change
nothing. The roots: dense, NHWC, nChw8c and dense in shared memory.
"""

import os
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import blobcore as bc


index_st = st.one_of(
    st.integers(-6, 6),
    st.builds(
        slice,
        st.one_of(st.none(), st.integers(-7, 7)),
        st.one_of(st.none(), st.integers(-7, 7)),
        st.one_of(st.none(), st.sampled_from([1, 2, 3, -1, -2])),
    ),
)
key_st = st.one_of(index_st, st.tuples(index_st, index_st), st.tuples(index_st, index_st, index_st))
small_st = st.integers(-8, 8)


def no_copy_asarray(b):
    """``np.asarray`` that shares or raises (a blocked blob would be copied)."""
    return np.asarray(b, copy=False)


class Doors(RuleBasedStateMachine):
    """Pairs (blob, mirror) over one memory, written through any door."""

    #: The root blob's dims and memory layout (subclasses change them).
    ROOT_DIMS = (4, 6, 5)
    SHARED = False

    @classmethod
    def make_root(cls, values):
        return bc.Blob.from_numpy(values.copy())

    def __init__(self):
        super().__init__()
        self.mirror = np.arange(np.prod(self.ROOT_DIMS), dtype=np.float32).reshape(self.ROOT_DIMS)
        self.root = self.make_root(self.mirror)
        # Each entry: (blob, its mirror view, how it was made).
        self.pairs = [(self.root, self.mirror, "root")]
        # NumPy arrays exported from blobs, with their mirrors.
        self.arrays = []
        self._export(self.root, self.mirror, no_copy_asarray)

    def _export(self, b, m, how):
        """Appends how(b), an array of b's memory, unless b's layout cannot
        be described by strides (blocked layouts are refused, as documented)."""
        try:
            a = how(b)
        except (bc.UnsupportedError, BufferError, ValueError) as e:
            assert "blocked" in str(e) or "copy" in str(e), e
            return None
        self.arrays.append((a, m))
        return a

    def _add(self, b, m, how):
        if len(self.pairs) < 24:
            self.pairs.append((b, m, how))

    def _check_all(self):
        for b, m, how in self.pairs:
            got = np.asarray(b.copy())
            assert got.shape == m.shape, how
            np.testing.assert_array_equal(got, m, err_msg=how)
        for a, m in self.arrays:
            np.testing.assert_array_equal(a, m)

    def _attempt(self, what, blob_op, mirror_op):
        """Runs blob_op; on success applies mirror_op, on a BlobError checks
        that nothing changed (any other exception fails the test)."""
        before = self.mirror.copy()
        try:
            blob_op()
        except bc.BlobError as e:
            assert "internal" not in str(e).lower(), (what, e)
            np.testing.assert_array_equal(np.asarray(self.root.copy()), before, err_msg=f"{what} failed ({e}) but wrote")
            return
        mirror_op()

    # ---- doors -------------------------------------------------------

    @rule(i=st.integers(0, 100), key=key_st)
    def view(self, i, key):
        b, m, how = self.pairs[i % len(self.pairs)]
        try:
            mv = m[key]
        except IndexError:
            with pytest.raises((bc.OutOfRangeError, IndexError, bc.BlobError)):
                b[key]
            return
        try:
            v = b[key]
        except bc.UnsupportedError as e:
            # Documented: no view starts or steps inside a dim's blocks.
            assert "inside its blocks" in str(e), e
            return
        if np.ndim(mv) == 0:
            assert float(v) == float(mv), (how, key)
            return
        assert isinstance(v, bc.Blob), (how, key)
        self._add(v, mv, f"{how}[{key!r}]")

    @rule(i=st.integers(0, 100))
    def transpose(self, i):
        b, m, how = self.pairs[i % len(self.pairs)]
        self._add(b.T, m.T, f"{how}.T")

    @rule(i=st.integers(0, 100), size=st.integers(1, 4), pos=st.integers(0, 4))
    def window(self, i, size, pos):
        b, m, how = self.pairs[i % len(self.pairs)]
        if m.ndim == 0 or size > m.shape[0]:
            return
        try:
            w = b.window(size)
        except bc.BlobError:
            return
        if pos + size <= m.shape[0]:
            w.set_parent_pos(pos)
        else:
            pos = 0
        self._add(w, m[pos:pos + size], f"{how}.window({size})@{pos}")

    @rule(i=st.integers(0, 100), data=st.data())
    def region(self, i, data):
        b, m, how = self.pairs[i % len(self.pairs)]
        if m.ndim == 0:
            return
        begin = [data.draw(st.integers(0, d)) for d in m.shape]
        end = [data.draw(st.integers(lo, d)) for lo, d in zip(begin, m.shape)]
        try:
            r = b.region(begin, end)
        except bc.UnsupportedError as e:
            assert "inside its blocks" in str(e), e
            return
        self._add(r, m[tuple(slice(lo, hi) for lo, hi in zip(begin, end))], f"{how}.region({begin},{end})")

    @rule(i=st.integers(0, 100))
    def pickled(self, i):
        b, m, how = self.pairs[i % len(self.pairs)]
        bufs = []
        c = pickle.loads(pickle.dumps(b, protocol=5, buffer_callback=bufs.append), buffers=bufs)
        shared = c.shares_memory(b)
        # Out-of-band pickle buffers share a dense blob's memory, and
        # others are copied.
        assert shared == (b.is_dense and b.count() > 0), how
        self._add(c, m if shared else m.copy(), f"pickle5({how})")

    @rule()
    def second_map(self):
        """The root's shared memory file mapped again: another address,
        the same memory."""
        try:
            fd, off = self.root.shared_fd()
        except (bc.InvalidArgumentError, bc.UnsupportedError) as e:
            # Documented: only a dense blob in shared memory has one.
            assert ("not in shared memory" in str(e) or "dense" in str(e)) and not self.SHARED, e
            return
        try:
            c = bc.from_shared_fd(fd, list(self.ROOT_DIMS), bc.float32, off)
        finally:
            os.close(fd)
        assert c.shares_memory(self.root)
        self._add(c, self.mirror, "from_shared_fd(root)")

    @rule(i=st.integers(0, 100), door=st.sampled_from(["asarray", "asblob", "from_dlpack", "np_dlpack", "memoryview", "numpy"]))
    def through_numpy(self, i, door):
        b, m, how = self.pairs[i % len(self.pairs)]
        try:
            a = no_copy_asarray(b)
        except ValueError as e:
            assert "copy" in str(e), e
            return
        rooted = np.shares_memory(m, self.mirror)
        assert bc.asblob(a).shares_memory(self.root) == rooted or not a.flags.c_contiguous, (door, how)
        if door == "asarray":
            self.arrays.append((a, m))
        elif door in ("asblob", "from_dlpack"):
            w = bc.asblob(a) if door == "asblob" else bc.from_dlpack(a)
            shared = np.shares_memory(np.asarray(w), a)
            # Documented: C-contiguous arrays are wrapped, others copied.
            assert shared == (a.flags.c_contiguous and a.size > 0), (door, how, a.strides)
            self._add(w, m if shared else m.copy(), f"{door}({how})")
        elif door == "memoryview":
            self._export(b, m, lambda b: np.asarray(memoryview(b)))
        elif door == "numpy":
            self._export(b, m, lambda b: b.numpy())
        else:
            self._export(b, m, lambda b: np.from_dlpack(b, copy=False))

    # ---- writes ------------------------------------------------------

    @rule(i=st.integers(0, 100), key=key_st, v=small_st)
    def setitem(self, i, key, v):
        b, m, how = self.pairs[i % len(self.pairs)]
        try:
            m[key]
        except IndexError:
            return
        self._attempt(f"{how}[{key!r}] = {v}", lambda: b.__setitem__(key, v), lambda: m.__setitem__(key, v))

    @rule(i=st.integers(0, 100), key=key_st, j=st.integers(0, 100))
    def setitem_blob(self, i, key, j):
        b, m, how = self.pairs[i % len(self.pairs)]
        s, sm, show = self.pairs[j % len(self.pairs)]
        try:
            target = m[key]
            np.broadcast_to(sm, np.shape(target))
        except (IndexError, ValueError):
            return
        self._attempt(f"{how}[{key!r}] = {show}", lambda: b.__setitem__(key, s), lambda: m.__setitem__(key, sm.copy()))

    @precondition(lambda self: self.arrays)
    @rule(i=st.integers(0, 100), k=st.integers(0, 100))
    def copy_to(self, i, k):
        b, m, how = self.pairs[i % len(self.pairs)]
        a, am = self.arrays[k % len(self.arrays)]
        if not (a.flags.c_contiguous and a.flags.writeable) or a.size > m.size:
            return
        flat = m.reshape(-1)[: a.size].copy()
        self._attempt(f"{how}.copy_to(array)", lambda: b.copy_to(a), lambda: am.__setitem__(Ellipsis, flat.reshape(am.shape)))

    @rule(i=st.integers(0, 100), v=small_st)
    def fill(self, i, v):
        b, m, how = self.pairs[i % len(self.pairs)]
        self._attempt(f"{how}.fill({v})", lambda: b.fill(v), lambda: m.__setitem__(Ellipsis, v))

    @rule(i=st.integers(0, 100), f=st.sampled_from([0.0, -1.0, 2.0, 0.5]))
    def scale(self, i, f):
        b, m, how = self.pairs[i % len(self.pairs)]
        self._attempt(f"{how}.scale({f})", lambda: b.scale(f), lambda: m.__imul__(np.float32(f)))

    @rule(i=st.integers(0, 100), j=st.integers(0, 100), op=st.sampled_from(["copy_from", "add"]))
    def from_blob(self, i, j, op):
        """``b.copy_from(s)`` or ``b.add(s)``, s any pair of the same dims
        (the same blob, or any view overlapping it, included)."""
        b, m, how = self.pairs[i % len(self.pairs)]
        s, sm, show = self.pairs[j % len(self.pairs)]
        if m.shape != sm.shape:
            return
        mirror = {"copy_from": lambda: m.__setitem__(Ellipsis, sm.copy()), "add": lambda: m.__iadd__(sm.copy())}[op]
        self._attempt(f"{how}.{op}({show})", lambda: getattr(b, op)(s), mirror)

    @precondition(lambda self: self.arrays)
    @rule(k=st.integers(0, 100), v=small_st)
    def numpy_write(self, k, v):
        a, m = self.arrays[k % len(self.arrays)]
        if a.flags.writeable:
            a[...] = v
            m[...] = v

    # ---- invariants --------------------------------------------------

    @invariant()
    def every_door_reads_the_mirror(self):
        self._check_all()

    @precondition(lambda self: len(self.pairs) > 1)
    @rule(i=st.integers(0, 100), j=st.integers(0, 100))
    def shares_memory_is_numpys(self, i, j):
        b, m, how = self.pairs[i % len(self.pairs)]
        c, n, chow = self.pairs[j % len(self.pairs)]
        assert b.shares_memory(c) == np.shares_memory(m, n), (how, chow)
        if np.shares_memory(m, n):
            assert b.may_share_memory(c), (how, chow)


class NhwcDoors(Doors):
    """The same over a root laid out NHWC (strided exports, a desc)."""

    ROOT_DIMS = (2, 3, 4, 5)

    @classmethod
    def make_root(cls, values):
        b = bc.Blob.with_desc(bc.TensorDesc(bc.float32, list(values.shape), bc.Layout.NHWC))
        b.copy_from(values)
        return b


class SharedDoors(Doors):
    """The same over a root in shared memory, also mapped a second time."""

    SHARED = True

    @classmethod
    def make_root(cls, values):
        return bc.Blob.from_numpy(values.copy()).share_memory()


class BlockedDoors(Doors):
    """The same over a root blocked by 8 channels (nChw8c): no exports."""

    ROOT_DIMS = (2, 16, 2, 3)

    @classmethod
    def make_root(cls, values):
        n, c, h, w = values.shape
        desc = bc.TensorDesc(bc.float32, [n, c, h, w], bc.BlockingDesc([n, c // 8, h, w, 8], [0, 1, 2, 3, 1]))
        b = bc.Blob.with_desc(desc)
        b.copy_from(values)
        return b


SETTINGS = settings(
    max_examples=400,
    stateful_step_count=30,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
test_doors = Doors.TestCase
test_doors.settings = SETTINGS
test_nhwc_doors = NhwcDoors.TestCase
test_nhwc_doors.settings = SETTINGS
test_shared_doors = SharedDoors.TestCase
test_shared_doors.settings = SETTINGS
test_blocked_doors = BlockedDoors.TestCase
test_blocked_doors.settings = SETTINGS
