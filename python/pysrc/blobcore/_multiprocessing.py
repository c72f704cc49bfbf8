"""Shared blobs cross ``multiprocessing`` as file descriptors.

A blob in shared memory (:meth:`Blob.share_memory`) pickled by
``multiprocessing`` — queues, pipes, ``Pool`` arguments and results,
``concurrent.futures.ProcessPoolExecutor``, with the spawn, forkserver and
fork start methods — travels as a descriptor of its memory file, passed the
way ``multiprocessing.reduction`` passes descriptors (``SCM_RIGHTS``), plus
its offset and layout. The receiver maps the same memory: constant time
whatever the size, and writes on either side are seen on the other. Blobs
not in shared memory pickle as before (their data). Plain ``pickle`` is not
affected: this reducer is registered with ``multiprocessing``'s pickler only.

As with PyTorch's file-descriptor strategy, a sender must stay alive until
the receiver has unpickled the blob (the descriptor is fetched from it).
"""

import os
import weakref
from multiprocessing import context, reduction

from ._blobcore import Blob
from ._errors import IoError


def _rebuild_shared(dupfd, layout):
    try:
        fd = dupfd.detach()
    except OSError as e:
        raise IoError(
            "cannot receive a shared blob's memory: the process that sent it has exited (or closed its "
            "connection) before this one unpickled it; keep senders of shared blobs alive until receivers "
            f"have them, as with torch.multiprocessing ({e})"
        ) from e
    try:
        return Blob._from_shared_handle(fd, layout)
    finally:
        os.close(fd)


def _reduce_blob(b):
    if not b.is_shared:
        return b.__reduce__()
    fd, layout = b._shared_handle()
    popen = context.get_spawning_popen()
    if popen is not None:
        # Pickled while a process is being started: the descriptor goes to
        # the child at its launch, so it must stay open until then; it is
        # closed with the process's Popen object.
        try:
            dupfd = popen.DupFd(popen.duplicate_for_child(fd))
        except BaseException:
            os.close(fd)
            raise
        weakref.finalize(popen, os.close, fd)
        return _rebuild_shared, (dupfd, layout)
    try:
        # The resource sharer keeps its own duplicate until the receiver
        # fetches it.
        return _rebuild_shared, (reduction.DupFd(fd), layout)
    finally:
        os.close(fd)


reduction.ForkingPickler.register(Blob, _reduce_blob)
