"""Writes an Iceberg table with Spark, as a production pipeline does, for cli/tests/iceberg.rs.

    python3 spark.py DIR

PySpark 4 with Iceberg's Spark runtime (the jars in SIEVE_SPARK_JARS, colon-separated: the
runtime and sqlite-jdbc; scripts/test.sh fetches them from Maven Central) writes `sp.orders` in
a JDBC catalog on SQLite in DIR/catalog.db (catalog name "writers"), its files under DIR:
three appends, a merge-on-read DELETE, MERGE and UPDATE (position delete files, Spark's own
Parquet settings), partitioned by region. Then `sp.vectors`: a v2 table with position delete
files, upgraded to format version 3, whose later DELETEs and UPDATE write deletion vectors
(Puffin blobs that take in the position deletes before them). And `sp.nested`: a list, a struct
and a map column. Prints, as one JSON object, what Spark reads back from each: every row (the
nested ones as JSON), and the answers to the lookups the test makes.
"""
import json
import os
import sys

from pyspark.sql import SparkSession

directory = os.path.abspath(sys.argv[1])
os.makedirs(directory, exist_ok=True)
jars = os.environ["SIEVE_SPARK_JARS"].replace(":", ",")
spark = (SparkSession.builder.master("local[2]").appName("sieve-iceberg-test")
         .config("spark.jars", jars)
         .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalog.writers", "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.writers.type", "jdbc")
         .config("spark.sql.catalog.writers.uri", f"jdbc:sqlite:{directory}/catalog.db")
         .config("spark.sql.catalog.writers.jdbc.schema-version", "V1")
         .config("spark.sql.catalog.writers.warehouse", f"file://{directory}")
         .config("spark.sql.shuffle.partitions", "2")
         .config("spark.ui.enabled", "false")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
sql = spark.sql
sql("create namespace if not exists writers.sp")
sql("""create table writers.sp.orders (id bigint, customer string, amount decimal(10, 2),
       region string, at timestamp) using iceberg partitioned by (region)
       tblproperties ('format-version' = '2', 'write.delete.mode' = 'merge-on-read',
                      'write.update.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read')""")
for first in [0, 1000, 2000]:
    sql(f"""insert into writers.sp.orders
            select id, concat('c', id), cast(id * 1.25 as decimal(10, 2)),
                   element_at(array('eu', 'us', 'ap'), cast(id % 3 as int) + 1),
                   timestamp_seconds(1700000000 + id)
            from range({first}, {first + 1000})""")
sql("delete from writers.sp.orders where id % 10 = 0")
sql("""merge into writers.sp.orders t
       using (select id, concat('m', id) as customer from range(1995, 2010)) s on t.id = s.id
       when matched then update set customer = s.customer, amount = 0
       when not matched then insert (id, customer, amount, region, at)
            values (s.id, s.customer, 1, 'eu', timestamp_seconds(1800000000))""")
sql("update writers.sp.orders set customer = 'updated' where id = 7")

merge_on_read = """'write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read',
                   'write.merge.mode' = 'merge-on-read'"""
sql(f"""create table writers.sp.vectors (id bigint, customer string) using iceberg
        tblproperties ('format-version' = '2', {merge_on_read})""")
for first in [0, 1000]:
    sql(f"insert into writers.sp.vectors select id, concat('v', id) from range({first}, {first + 1000})")
sql("delete from writers.sp.vectors where id % 10 = 0")
sql("alter table writers.sp.vectors set tblproperties ('format-version' = '3')")
sql("delete from writers.sp.vectors where id % 10 = 1")
sql("update writers.sp.vectors set customer = 'updated' where id = 7")
sql("delete from writers.sp.vectors where id = 1502")

# Nested columns as Spark writes them (through Iceberg's Parquet writer): a list, a struct and a
# map, with empty and null values among them.
sql("""create table writers.sp.nested (id bigint, tags array<string>, point struct<x: double, y: double>,
       attrs map<string, bigint>) using iceberg tblproperties ('format-version' = '2')""")
sql("""insert into writers.sp.nested values
       (1, array('a', 'b'), named_struct('x', cast(1.5 as double), 'y', cast(-2 as double)), map('k', 1L, 'l', 2L)),
       (2, cast(array() as array<string>), null, cast(map() as map<string, bigint>)),
       (3, null, named_struct('x', cast(0 as double), 'y', cast(null as double)), null)""")
# As JSON, nulls inside kept, as Sieve sends nested values over MySQL.
nested = sql("""select id, to_json(tags), to_json(point, map('ignoreNullFields', 'false')), to_json(attrs)
                from writers.sp.nested order by id""").collect()


def read_back(table, columns, keys):
    rows = sql(f"select {columns} from writers.sp.{table} order by id").collect()
    lookups = {str(k): [r.customer for r in sql(f"select customer from writers.sp.{table} where id = {k}").collect()]
               for k in keys}
    return {"rows": [[str(v) for v in r] for r in rows], "lookups": lookups}


print(json.dumps({
    "orders": read_back("orders", "id, customer, amount", [0, 7, 10, 11, 1995, 2000, 2001, 2005, 2999, 3000, 5000]),
    "vectors": read_back("vectors", "id, customer", [0, 1, 2, 7, 10, 11, 1500, 1501, 1502, 1503, 1999, 2000]),
    "nested": [["NULL" if v is None else str(v) for v in r] for r in nested],
}))
spark.stop()
