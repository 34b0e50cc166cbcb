"""Rows worked out on the driver, handed to Spark as a DataFrame."""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType


def driver_frame(spark: SparkSession, rows: Sequence[dict[str, Any]], schema: str | pa.Schema) -> DataFrame:
    """``rows`` as a one-partition DataFrame of ``schema`` (a table's DDL, or the Arrow
    schema a Python pass gives them in), through Arrow: the JVM reads them with no Python
    worker. A DataFrame made from a list of rows runs one at every action: twice the time
    of writing a small table, and 1.2-2.3 s of waiting in a one-off run of 90 files, where
    the per-topic pass broadcasts the rounds' seqs."""
    if isinstance(schema, str):
        struct = StructType.fromDDL(schema)
        assert isinstance(struct, StructType)
        schema = to_arrow_schema(struct, timezone="UTC")
    return spark.createDataFrame(pa.Table.from_pylist(list(rows), schema=schema)).coalesce(1)
