"""The recovery-point audit of log dirs, on one machine or on Spark, and the Parquet export.

discovery (driver: log dirs, root files, segment tasks) → segments (the scan of one `.log`) →
checks (one partition against its checkpoints) → fleet (replicas, consumer offsets,
meta.properties, the report). local.py runs the stages in one process, spark.py on Spark over a
shared mount. For fleets whose log dirs stay on the brokers, summary_writer.py runs discovery and
the scan on each broker and keeps what the checks need as Parquet (summary_tables.py, in the
locations of summary_store.py), and spark_summaries.py runs the checks over every broker's
summary on Spark. spark.py and spark_summaries.py are the only modules that import pyspark;
export.py writes records to Parquet; report.py renders the HTML page.
"""
