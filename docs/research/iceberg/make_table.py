import os, sys, pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
wh = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "warehouse"); os.makedirs(wh, exist_ok=True)
cat = SqlCatalog("sieve_test", uri=f"sqlite:///{wh}/catalog.db", warehouse=f"file://{wh}")
cat.create_namespace_if_not_exists("ns")
df = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": pa.array(["a", "b", "c"])})
t = cat.create_table_if_not_exists("ns.people", schema=df.schema)
t.append(df)                                              # snapshot 1
t.append(pa.table({"id": pa.array([4], pa.int64()), "name": pa.array(["d"])}))  # snapshot 2
t.delete("id = 2")   # copy-on-write rewrite (PyIceberg writes no delete files)
print(t.metadata_location, len(t.scan().to_arrow()))
