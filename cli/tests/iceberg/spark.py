"""Writes an Iceberg table with Spark, as a production pipeline does, for cli/tests/iceberg.rs.

    python3 spark.py DIR

PySpark 4 with Iceberg's Spark runtime (the jars in SIEVE_SPARK_JARS, colon-separated: the
runtime and sqlite-jdbc; scripts/test.sh fetches them from Maven Central) writes `sp.orders` in
a JDBC catalog on SQLite in DIR/catalog.db (catalog name "writers"), its files under DIR:
three appends, a merge-on-read DELETE, MERGE and UPDATE (position delete files, Spark's own
Parquet settings), partitioned by region. Prints, as one JSON object, what Spark reads back:
every row, and the answers to the lookups the test makes.
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

rows = sql("select id, customer, amount from writers.sp.orders order by id").collect()
keys = [0, 7, 10, 11, 1995, 2000, 2001, 2005, 2999, 3000, 5000]
lookups = {str(k): [r.customer for r in sql(f"select customer from writers.sp.orders where id = {k}").collect()]
           for k in keys}
print(json.dumps({"rows": [[r.id, r.customer, str(r.amount)] for r in rows], "lookups": lookups}))
spark.stop()
