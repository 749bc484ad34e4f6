"""Everything laid out on disk: segments, indexes, checkpoints, the segment manager, a log dir.

Every file operation goes through a `Disk` (see `disk.py`), so the crash simulator can run this
same code on a disk that loses power.
"""
