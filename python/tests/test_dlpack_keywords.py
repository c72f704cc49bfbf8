"""`Blob.__dlpack__`'s own keyword parsing (a vectorcall method, see
python/src/dlpack_call.rs) against an oracle: Python's parser binding the
same signature, then the documented rules for each value. Calls come with
keyword names interned (as Python source writes them) and built at run
time (as NumPy's C code passes them), positional arguments,
unknown names and values of every kind."""

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import blobcore as bc

NAMES = ["stream", "max_version", "dl_device", "copy"]
VALUES = [None, (1, 0), (1, 3), (0, 9), (2, 0), (1, 0, 0), (-1, 0), (2**32, 0), (2**64, 0), (1, 2**63), (-(2**63) - 1, 0), (2**31, 0), (1, "0"), "x", 3, -1, True, False, 1.5, [1, 0]]


def _signature(*, stream=None, max_version=None, dl_device=None, copy=None):
    return dict(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)


def _pair(v, lo, hi):
    return isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, int) and lo <= x <= hi for x in v)


def oracle(here, args, kwargs):
    """The outcome the documented signature and rules give: an exception
    type, or the capsule's name."""
    try:
        a = _signature(*args, **kwargs)
    except TypeError:
        return TypeError
    if a["stream"] is not None and not (isinstance(a["stream"], int) and -(2**63) <= a["stream"] < 2**63):
        return TypeError
    if a["max_version"] is not None and not _pair(a["max_version"], 0, 2**32 - 1):
        return TypeError
    if a["dl_device"] is not None and not _pair(a["dl_device"], -(2**31), 2**31 - 1):
        return TypeError
    if a["copy"] is not None and not isinstance(a["copy"], bool):
        return TypeError
    target = a["dl_device"] if a["dl_device"] is not None else here
    if target == (1, 0):
        if a["stream"] is not None and here == (1, 0):
            return BufferError
    elif target != here:
        return BufferError
    versioned = a["max_version"] is not None and a["max_version"][0] >= 1
    return "dltensor_versioned" if versioned else "dltensor"


def _name(n, interned):
    # A name built at run time is a new string object, not the interned one.
    return sys.intern(n) if interned else "".join(list(n))


call = st.tuples(
    st.lists(st.sampled_from(VALUES), max_size=1),
    st.lists(st.tuples(st.sampled_from(NAMES + ["strem", "version", ""]), st.sampled_from(range(len(VALUES))), st.booleans()), max_size=5),
)


@settings(derandomize=True, deadline=None, max_examples=400, suppress_health_check=list(HealthCheck))
@given(call)
def test_dlpack_keywords_bind_and_check_as_the_signature_says(c):
    positional, keywords = c
    b = bc.Blob.from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    here = tuple(b.__dlpack_device__())
    kwargs = {}
    for name, v, interned in keywords:
        kwargs[_name(name, interned)] = VALUES[v]
    want = oracle(here, positional, kwargs)
    try:
        cap = b.__dlpack__(*positional, **kwargs)
    except (TypeError, BufferError) as e:
        assert type(e) is want, (positional, kwargs, e)
        return
    assert want in ("dltensor", "dltensor_versioned"), (positional, kwargs, want)
    assert f'"{want}"' in repr(cap)
    if here == (1, 0) and want == "dltensor_versioned":
        # The capsule is a working export: NumPy reads the blob through it.
        class Holder:
            def __dlpack__(self, **kw):
                return cap

            def __dlpack_device__(self):
                return here

        np.testing.assert_array_equal(np.from_dlpack(Holder()), np.arange(6, dtype=np.float32).reshape(2, 3))


def test_dlpack_keywords_reach_the_export_by_either_name_object():
    b = bc.Blob.from_numpy(np.arange(3, dtype=np.float32))
    for interned in (True, False):
        kw = {_name("max_version", interned): (1, 0), _name("copy", interned): True}
        cap = b.__dlpack__(**kw)
        assert '"dltensor_versioned"' in repr(cap)
    # NumPy's from_dlpack passes its names as new strings: the text path.
    np.testing.assert_array_equal(np.from_dlpack(b), [0, 1, 2])
