"""PyIceberg writes t10b's shape into an Iceberg table, as the attached-table benchmarks read it:
`python3 pyiceberg_t10b.py WORK WAREHOUSE ROWS FILE_ROWS KEYS_N`. A SqlCatalog on SQLite
(WORK/catalog.db, catalog name "writers") holds ns.t10b: c1 the row number, c2 a random decimal
as text, appended FILE_ROWS rows at a time with PyIceberg's default Parquet settings (1M-row row
groups, 1 MB pages of at most 20,000 rows, zstd, no page index; SIEVE_BENCH_CODEC, e.g. snappy
or gzip, sets write.parquet.compression-codec instead; SIEVE_BENCH_PAGE_ROWS and
SIEVE_BENCH_PAGE_BYTES set write.parquet.page-row-limit and write.parquet.page-size-bytes, which
PyIceberg gives PyArrow as its write batch and page size: PyArrow checks a page's size after each
batch, so pages hold page-row-limit rows where a batch's values outweigh page-size-bytes;
SIEVE_BENCH_GROUP_ROWS sets write.parquet.row-group-limit, the rows of a row group;
SIEVE_BENCH_FILE_BYTES sets write.target-file-size-bytes, which PyIceberg divides by a row's
in-memory bytes, ~30 here, to cut each append into files of that many rows: a table of many
small files, as streaming writers leave). KEYS_N of its c2 values, drawn
uniformly, are written shuffled to WORK/attached-present.keys, and WORK/sieve.toml attaches the
catalog to Sieve as `lake` (its indexer idle). The S3 settings are the environment's
(scripts/minio.sh)."""
import os, sys, time
import numpy as np
import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
work, warehouse, rows_text, file_rows, keys_n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
scale = {"k": 10**3, "M": 10**6, "B": 10**9}
rows = int(float(rows_text[:-1]) * scale[rows_text[-1]]) if rows_text[-1] in scale else int(rows_text)
s3 = {"s3.endpoint": os.environ["AWS_ENDPOINT"], "s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
      "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"], "s3.region": os.environ["AWS_REGION"]}
catalog = SqlCatalog("writers", uri=f"sqlite:///{work}/catalog.db", warehouse=warehouse, **s3)
catalog.create_namespace("ns")
settings = {"SIEVE_BENCH_CODEC": "write.parquet.compression-codec",
            "SIEVE_BENCH_PAGE_ROWS": "write.parquet.page-row-limit",
            "SIEVE_BENCH_PAGE_BYTES": "write.parquet.page-size-bytes",
            "SIEVE_BENCH_GROUP_ROWS": "write.parquet.row-group-limit",
            "SIEVE_BENCH_FILE_BYTES": "write.target-file-size-bytes"}
properties = {prop: os.environ[var] for var, prop in settings.items() if os.environ.get(var)}
table = catalog.create_table("ns.t10b", schema=pa.schema([pa.field("c1", pa.int64()), pa.field("c2", pa.string())]),
                             properties=properties)
rng = np.random.default_rng(42)
wanted = np.sort(rng.choice(rows, size=keys_n, replace=False))
keys, started = [], time.time()
for first in range(0, rows, file_rows):
    n = min(file_rows, rows - first)
    c2 = rng.random(n).astype(str)
    mine = wanted[(wanted >= first) & (wanted < first + n)] - first
    keys += list(c2[mine])
    table.append(pa.table({"c1": pa.array(np.arange(first, first + n), pa.int64()), "c2": pa.array(c2)}))
files = table.scan().plan_files()
print(f"PyIceberg wrote {rows:,} rows in {len(files)} files ({properties or 'default settings'}) in {time.time() - started:.0f} s")
rng.shuffle(keys)
with open(f"{work}/attached-present.keys", "w") as f:
    f.write("\n".join(keys) + "\n")
with open(f"{work}/sieve.toml", "w") as f:
    f.write(f"""[[iceberg_catalogs]]
name = "lake"
uri = "sqlite://{work}/catalog.db"
catalog_name = "writers"
warehouse = "{warehouse}"
index_interval_s = 86400
""")
