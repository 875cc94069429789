"""Appends to the ns.t10b that pyiceberg_t10b.py wrote while Sieve servers follow it, as a table a
streaming writer appends to between the indexer's passes: `python3 pyiceberg_appends.py WORK
WAREHOUSE FIRST APPENDS APPEND_ROWS PORT...`. APPENDS times, one file of APPEND_ROWS rows (c1 from
FIRST on, c2 a random decimal as text), then waits until every server on PORT... has indexed it
(EXPLAIN ANALYZE of a lookup counts no file not indexed): each server's indexer, every second,
makes a part of it. One c2 value of each file is added to WORK/attached-present.keys."""
import os, re, sys, time
import numpy as np
import pyarrow as pa
import pymysql
from pyiceberg.catalog.sql import SqlCatalog
work, warehouse = sys.argv[1], sys.argv[2]
first, appends, append_rows = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
ports = [int(p) for p in sys.argv[6:]]
s3 = {"s3.endpoint": os.environ["AWS_ENDPOINT"], "s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
      "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"], "s3.region": os.environ["AWS_REGION"]}
table = SqlCatalog("writers", uri=f"sqlite:///{work}/catalog.db", warehouse=warehouse, **s3).load_table("ns.t10b")
cursors = [pymysql.connect(host="127.0.0.1", port=p, user="root", autocommit=True).cursor() for p in ports]
rng = np.random.default_rng(7)
keys, started = [], time.time()
for i in range(appends):
    c2 = rng.random(append_rows).astype(str)
    keys.append(c2[rng.integers(append_rows)])
    c1 = np.arange(first + i * append_rows, first + (i + 1) * append_rows)
    table.append(pa.table({"c1": pa.array(c1, pa.int64()), "c2": pa.array(c2)}))
    for cur in cursors:
        deadline = time.time() + 120
        while True:
            cur.execute("explain analyze select c1 from lake.ns.t10b where c2 = 'x'")
            plan = "\n".join(str(row[-1]) for row in cur.fetchall())
            if int(re.search(r"files_not_indexed=(\d+)", plan).group(1)) == 0:
                break
            assert time.time() < deadline, f"append {i} not indexed in 120 s: {plan}"
            time.sleep(0.2)
print(f"{appends} appends of {append_rows:,} rows, each indexed by {len(ports)} servers, in {time.time() - started:.0f} s")
with open(f"{work}/attached-present.keys", "a") as f:
    f.write("\n".join(keys) + "\n")
