"""`logrepair` as a file for spark-submit, which runs a Python file rather than a module:

    spark-submit --master spark://host:7077 \
        "$(python -c 'import logrepair.audit.submit as s; print(s.__file__)')" \
        audit --spark /mnt/kafka-fleet --out /mnt/audit-out

`--spark` without a MASTER keeps the master spark-submit set.
"""

import sys

from logrepair.cli import main

if __name__ == "__main__":
    sys.exit(main())
