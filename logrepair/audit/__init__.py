"""The recovery-point audit of log dirs, on one machine or on Spark, and the Parquet export.

discovery (driver: log dirs, root files, segment tasks) → segments (the scan of one `.log`) →
checks (one partition against its checkpoints) → fleet (replicas, consumer offsets,
meta.properties, the report). local.py runs the stages in one process, spark.py on Spark (the only
module that imports pyspark); export.py writes records to Parquet; report.py renders the HTML page.
"""
