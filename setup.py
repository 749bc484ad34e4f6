"""The optional C accelerator of deep record reading (`logrepair.format._records`); everything else
about the build is in pyproject.toml.

`optional=True`: without a compiler or Python's headers the build only warns, and
`logrepair.format.record_codec` uses its pure-Python reader. The source's SHA-256 is compiled in
(`_records.SOURCE_SHA256`) so that a test can tell a stale in-place build from a current one.
"""

import hashlib
from pathlib import Path

from setuptools import Extension, setup

SOURCE = "logrepair/format/_records.c"
digest = hashlib.sha256((Path(__file__).parent / SOURCE).read_bytes()).hexdigest()

setup(
    ext_modules=[
        Extension(
            "logrepair.format._records",
            [SOURCE],
            define_macros=[("SOURCE_SHA256", f'"{digest}"')],
            optional=True,
        )
    ]
)
