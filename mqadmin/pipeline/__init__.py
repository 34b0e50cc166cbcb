"""Route history: capture every name server's routes over time, analyse them with Spark.

``schema`` (the capture file format, SCHEMA.md), ``capture`` (atomic writes and the
``snapshot`` loop), ``synth`` (synthetic histories), ``flatten``, ``chains``, ``topics``
and ``rules`` (the Python halves of the Spark job: a route to rows, chains of capture
files to fact intervals, a topic's intervals to its comparisons, rows to ``diff_views``),
``tables`` and ``job`` (the PySpark job), ``report`` (report.html). Only ``schema``,
``capture`` and ``synth`` are imported without PySpark.
"""
