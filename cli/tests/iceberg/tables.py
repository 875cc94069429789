"""Writes Iceberg tables with PyIceberg, as a user's other engines would, for cli/tests/iceberg.rs.

    python3 tables.py DIR make [s3://bucket/prefix]   # the tables below, cataloged in DIR/catalog.db
    python3 tables.py DIR append [s3://bucket/prefix] # one more commit to ns.people
    python3 tables.py DIR keys                        # ns.keys: 8 appends of 1000 rows each
    python3 tables.py DIR more_keys                   # one more file of ns.keys (ids 9000-9099)
    python3 tables.py DIR grouped                     # ns.grouped: one file in 8 row groups
    python3 tables.py DIR big                         # ns.big: one file of 200,000 rows
    python3 tables.py DIR paged                       # ns.paged: five files of small pages
    python3 tables.py DIR rename_again                # ns.renamed's label renamed tag, one more row
    python3 tables.py DIR upserts                     # ns.upserts, ns.regions: equality deletes
    python3 tables.py DIR drop_name                   # ns.upserts' name dropped
    python3 tables.py DIR upsert_more                 # one more file of ns.upserts (id 2000)
    python3 tables.py DIR promoted                    # ns.promoted: an int id, two files
    python3 tables.py DIR promote                     # its id widened to long, one more file
    python3 tables.py DIR migrated                    # ns.migrated: a file without field ids, renamed
    python3 tables.py DIR shapes                      # ns.shapes: v3 geometry and geography columns
    python3 tables.py DIR variants                    # ns.variants: a v3 variant column (DuckDB)
    python3 tables.py DIR stray                       # ns.stray: its files outside the warehouse
    python3 tables.py DIR mixed                       # Mixed.Orders: names not in lower case

The tables' files go to DIR, or to the S3 prefix (with AWS_ENDPOINT, AWS_ACCESS_KEY_ID, … from
the environment, as scripts/minio.sh exports them). Prints, as one JSON object, what PyIceberg's
own scan reads from each table: the rows Sieve must return. The SQL catalog is named "writers"
(Sieve's configuration says catalog_name). With SIEVE_REST_URI set, the tables are made through
that REST catalog instead, which decides where their files go.
"""
import json
import os
import random
import sys
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.io.pyarrow import _dataframe_to_data_files
from pyiceberg.manifest import (DataFile, DataFileContent, FileFormat, ManifestContent, ManifestEntry,
                                ManifestEntryStatus, ManifestWriterV2, write_manifest_list)
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate
from pyiceberg.typedef import Record
from pyiceberg.types import DoubleType, LongType, StringType

directory = os.path.abspath(sys.argv[1])
os.makedirs(directory, exist_ok=True)
warehouse = sys.argv[3] if len(sys.argv) > 3 else f"file://{directory}"
s3 = {}
if warehouse.startswith("s3://"):
    s3 = {"s3.endpoint": os.environ["AWS_ENDPOINT"], "s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
          "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"], "s3.region": os.environ["AWS_REGION"]}
if "SIEVE_REST_URI" in os.environ:
    catalog = RestCatalog("writers", uri=os.environ["SIEVE_REST_URI"], **s3)
else:
    catalog = SqlCatalog("writers", uri=f"sqlite:///{directory}/catalog.db", warehouse=warehouse, **s3)


def people(ids, names):
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names, pa.string())})


class DeleteManifestWriter(ManifestWriterV2):
    """PyIceberg 0.12 writes deletes only by rewriting files; position and equality delete files
    (what Spark and Flink write) are committed here by hand through its manifest classes."""

    def content(self):
        return ManifestContent.DELETES

    @property
    def _meta(self):
        return {**super()._meta, "content": "deletes"}


def field_id(i):
    return {b"PARQUET:field_id": str(i).encode()}


def delete_file(table, content, columns, schema, partition=Record(), **extra):
    """A delete file of `columns` (name: values) as Parquet of `schema`, for [`commit`]."""
    md = table.metadata
    path = f"{md.location}/data/{uuid.uuid4()}-deletes.parquet"
    with table.io.new_output(path).create() as out:
        pq.write_table(pa.table(columns, schema=schema), out)
    data_file = DataFile.from_args(content=content, file_path=path, file_format=FileFormat.PARQUET,
                                   partition=partition, record_count=len(next(iter(columns.values()))),
                                   file_size_in_bytes=len(table.io.new_input(path)), **extra)
    data_file.spec_id = md.default_spec_id
    return data_file


def delete_positions(table, target, positions):
    schema = pa.schema([pa.field("file_path", pa.string(), False, field_id(2147483546)),
                        pa.field("pos", pa.int64(), False, field_id(2147483545))])
    columns = {"file_path": [target] * len(positions), "pos": positions}
    commit(table, [delete_file(table, DataFileContent.POSITION_DELETES, columns, schema)])


def delete_equal(table, columns, partition=Record()):
    """An equality delete file (what Flink's upserts write): every row of a data file of an
    older sequence number (in `partition`) whose columns equal one of these rows is deleted."""
    fields = [table.schema().find_field(name) for name in columns]
    schema = pa.schema([pa.field(f.name, pa.int64() if str(f.field_type) == "long" else pa.string(),
                                 True, field_id(f.field_id)) for f in fields])
    return delete_file(table, DataFileContent.EQUALITY_DELETES, columns, schema, partition,
                       equality_ids=[f.field_id for f in fields])


def commit(table, deletes, rows=None):
    """Commits delete files, and the data files of `rows` in the same snapshot (so of the same
    sequence number, as Flink commits an upsert), by hand through PyIceberg's manifest classes."""
    parent, md = table.current_snapshot(), table.metadata
    snapshot_id = uuid.uuid4().int & ((1 << 63) - 1)
    sequence = md.next_sequence_number()
    manifests = []
    for content, files in [(ManifestContent.DATA, [] if rows is None else list(_dataframe_to_data_files(md, rows, table.io))),
                           (ManifestContent.DELETES, deletes)]:
        if not files:
            continue
        out = table.io.new_output(f"{md.location}/metadata/{uuid.uuid4()}-m{content.value}.avro")
        writer_class = DeleteManifestWriter if content == ManifestContent.DELETES else ManifestWriterV2
        with writer_class(md.spec(), md.schema(), out, snapshot_id, "deflate") as writer:
            for file in files:
                writer.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id,
                                                   data_file=file))
        manifests.append(writer.to_manifest_file())
    manifests += parent.manifests(table.io)
    list_path = f"{md.location}/metadata/snap-{snapshot_id}-0-{uuid.uuid4()}.avro"
    with write_manifest_list(format_version=2, output_file=table.io.new_output(list_path), snapshot_id=snapshot_id,
                             parent_snapshot_id=parent.snapshot_id, sequence_number=sequence,
                             avro_compression="deflate") as lists:
        lists.add_manifests(manifests)
    operation = Operation.DELETE if rows is None else Operation.OVERWRITE
    snapshot = Snapshot(snapshot_id=snapshot_id, parent_snapshot_id=parent.snapshot_id, sequence_number=sequence,
                        manifest_list=list_path, schema_id=md.current_schema_id,
                        summary=Summary(operation, **{"added-delete-files": str(len(deletes))}))
    catalog.commit_table(table, requirements=(AssertRefSnapshotId(snapshot_id=parent.snapshot_id, ref="main"),),
                         updates=(AddSnapshotUpdate(snapshot=snapshot),
                                  SetSnapshotRefUpdate(snapshot_id=snapshot_id, parent_snapshot_id=parent.snapshot_id,
                                                       ref_name="main", type=SnapshotRefType.BRANCH)))
    return catalog.load_table(table.name())


def make():
    catalog.create_namespace_if_not_exists("ns")
    catalog.create_namespace_if_not_exists("other")
    t = catalog.create_table("ns.people", schema=people([], []).schema)
    t.append(people(list(range(0, 10000)), [f"p{i}" for i in range(0, 10000)]))
    t.append(people(list(range(10000, 10100)), [f"p{i}" for i in range(10000, 10100)]))
    t.delete("id = 5")  # copy-on-write: the first file is rewritten without row 5
    # Rows 0, 1 and 99 of the 100-row file (ids 10000, 10001, 10099) deleted by position.
    small = [task.file.file_path for task in t.scan().plan_files() if task.file.record_count == 100]
    delete_positions(catalog.load_table("ns.people"), small[0], [0, 1, 99])
    catalog.create_table("ns.empty", schema=people([], []).schema)
    # NaN, which Parquet's statistics leave out: a row group of max 2.5 holds a row > 5.
    floats = pa.table({"d": pa.array([1.5, float("nan"), 2.5], pa.float64())})
    catalog.create_table("ns.floats", schema=floats.schema).append(floats)
    # A file per schema (two keys each, so an index keeps them: Sieve leaves a file of one key
    # to min/max): name renamed label after the first; name dropped and another name
    # added (a new field id) after the first of ns.replaced.
    renamed = catalog.create_table("ns.renamed", schema=people([], []).schema)
    renamed.append(people([1, 11], ["a", "a2"]))
    with renamed.update_schema() as update:
        update.rename_column("name", "label")
    renamed.append(people([2, 12], ["b", "b2"]).rename_columns(["id", "label"]))
    replaced = catalog.create_table("ns.replaced", schema=people([], []).schema)
    replaced.append(people([1], ["a"]))
    with replaced.update_schema() as update:
        update.delete_column("name")
    with replaced.update_schema() as update:
        update.add_column("name", StringType())
    replaced.append(people([2], ["b"]))
    # Nested columns: a list, a struct and a map, with empty and null values among them.
    nested = pa.schema([pa.field("id", pa.int64()), pa.field("tags", pa.list_(pa.string())),
                        pa.field("point", pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.float64())])),
                        pa.field("attrs", pa.map_(pa.string(), pa.int64()))])
    catalog.create_table("other.nested", schema=nested).append(pa.table({
        "id": [1, 2, 3], "tags": [["a", "b"], [], None], "point": [{"x": 1.5, "y": -2.0}, None, {"x": 0.0, "y": None}],
        "attrs": [[("k", 1), ("l", 2)], [], None]}, schema=nested))
    # A nested field added since: the first file's points have no z.
    with catalog.load_table("other.nested").update_schema() as update:
        update.add_column(("point", "z"), DoubleType())
    table = catalog.load_table("other.nested")
    table.append(pa.table({"id": [4], "tags": [["c"]], "point": [{"x": 1.0, "y": 2.0, "z": 3.0}],
                           "attrs": [[("m", 9)]]}, schema=table.schema().as_arrow()))


def append():
    catalog.load_table("ns.people").append(people([20000], ["new"]))


def keys_file(table, first, count):
    ids = list(range(first, first + count))
    table.append(pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array([f"k{i}" for i in ids], pa.string()),
                           "score": pa.array([i * 0.5 for i in ids], pa.float64())}))


def keys():
    """A data file per append, each its own range of ids: an index over id or name leaves out
    every file but the key's."""
    catalog.create_namespace_if_not_exists("ns")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string()), pa.field("score", pa.float64())])
    table = catalog.create_table("ns.keys", schema=schema)
    for i in range(8):
        keys_file(table, i * 1000, 1000)


def grouped():
    """ns.grouped: one file of 8000 ids in 8 row groups of 1000, in an order that leaves each row
    group's bounds the whole range, so only an index can tell its row groups apart."""
    catalog.create_namespace_if_not_exists("ns")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    table = catalog.create_table("ns.grouped", schema=schema, properties={"write.parquet.row-group-limit": "1000"})
    ids = list(range(8000))
    random.Random(7).shuffle(ids)
    table.append(pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array([f"g{i}" for i in ids], pa.string())}))


def more_keys():
    keys_file(catalog.load_table("ns.keys"), 9000, 100)


def key_file():
    """One more file of ns.keys: the next 100 ids after 20000, one file's worth per call."""
    table = catalog.load_table("ns.keys")
    appended = sum(1 for task in table.scan(row_filter="id >= 20000").plan_files())
    keys_file(table, 20000 + 100 * appended, 100)


def compact_keys():
    """ns.keys rewritten into one file, as a compaction does: every file it had is removed."""
    table = catalog.load_table("ns.keys")
    table.overwrite(table.scan().to_arrow())


def rename_again():
    renamed = catalog.load_table("ns.renamed")
    with renamed.update_schema() as update:
        update.rename_column("label", "tag")
    renamed.append(people([3, 13], ["c", "c2"]).rename_columns(["id", "tag"]))


def upserts():
    """Equality deletes as Flink's upserts write them: ns.upserts deletes by id, and by id and
    name, and a null name; ns.regions (partitioned by region) deletes id 1 in region a only."""
    catalog.create_namespace_if_not_exists("ns")
    t = catalog.create_table("ns.upserts", schema=people([], []).schema)
    t.append(people(list(range(1000)), [f"v1-{i}" for i in range(1000)]))
    # Ids 3, 500 and 999 deleted, 3 and 500 written again in the same commit, which the delete
    # (of the same sequence number) leaves alone.
    t = commit(t, [delete_equal(t, {"id": [3, 500, 999]})], people([3, 500], ["v2-3", "v2-500"]))
    t.append(pa.table({"id": pa.array([1000], pa.int64()), "name": pa.array([None], pa.string())}))
    t = commit(t, [delete_equal(t, {"id": [500, 7], "name": ["v2-500", "wrong"]}),
                   delete_equal(t, {"name": pa.array([None], pa.string())})])
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("region", pa.string())])
    regions = catalog.create_table("ns.regions", schema=schema)
    with regions.update_spec() as update:
        update.add_identity("region")
    regions.append(pa.table({"id": pa.array([1, 2, 1, 2], pa.int64()), "region": ["a", "a", "b", "b"]}))
    commit(regions, [delete_equal(regions, {"id": [1]}, partition=Record("a"))])


def drop_name():
    """ns.upserts' name dropped: its equality deletes over (id, name) and over name still apply."""
    with catalog.load_table("ns.upserts").update_schema() as update:
        update.delete_column("name")


def upsert_more():
    catalog.load_table("ns.upserts").append(pa.table({"id": pa.array([2000], pa.int64())}))


def promoted():
    """ns.promoted: an int id in two files; `promote` widens it to long and adds a third."""
    catalog.create_namespace_if_not_exists("ns")
    schema = pa.schema([pa.field("id", pa.int32()), pa.field("name", pa.string())])
    table = catalog.create_table("ns.promoted", schema=schema)
    for ids in [[1, 2], [3, 4]]:
        table.append(pa.table({"id": pa.array(ids, pa.int32()), "name": [f"p{i}" for i in ids]}))


def promote():
    table = catalog.load_table("ns.promoted")
    with table.update_schema() as update:
        update.update_column("id", LongType())
    table.append(people([5, 2**40], ["p5", "big"]))


def nested():
    """ns.deep.t: a table in a namespace of two levels (ns, deep), its metadata files gzipped
    (which a REST catalog's Java server writes as ….gz.metadata.json)."""
    catalog.create_namespace_if_not_exists(("ns", "deep"))
    gzipped = {"write.metadata.compression-codec": "gzip"}
    catalog.create_table(("ns", "deep", "t"), schema=people([], []).schema, properties=gzipped) \
        .append(people([1, 2], ["d1", "d2"]))


def defaults():
    """ns.defaults: a file of ids 1 to 3, then columns c (long) and s (string) added with initial
    defaults 7 and 'x' (which PyIceberg reads in the older file's rows), then ids 10 to 13 with
    their own c and s."""
    catalog.create_namespace_if_not_exists("ns")
    table = catalog.create_table("ns.defaults", schema=pa.schema([pa.field("id", pa.int64())]))
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    with table.update_schema() as update:
        update.add_column("c", LongType(), default_value=7)
        update.add_column("s", StringType(), default_value="x")
    table = catalog.load_table("ns.defaults")
    table.append(pa.table({"id": pa.array([10, 11, 12, 13], pa.int64()),
                           "c": pa.array([9, 10, 11, 12], pa.int64()), "s": ["a", "b", "c", "d"]}))


def paged():
    """ns.paged: five files of 100,000 shuffled ids each (0 to 99,999, 100,000 to 199,999,
    200,000 to 299,999, then 1,000,000 to 1,099,999 and 1,100,000 to 1,199,999), a row group
    each, in pages of about 4 KB: the first as PyIceberg writes (zstd, no page index), the
    second written by PyArrow (snappy, its default) with a page index and added as it is, the
    third gzip without a page index (as Iceberg wrote before 1.4, through parquet-mr), the last
    two LZ4 (PyArrow's: raw blocks) and Brotli with a page index."""
    catalog.create_namespace_if_not_exists("ns")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
    small = {"write.parquet.row-group-limit": "1000000", "write.parquet.page-size-bytes": "4096",
             "write.parquet.page-row-limit": "1000", "write.parquet.dict-size-bytes": "4096"}
    table = catalog.create_table("ns.paged", schema=schema, properties=small)

    def rows(first):
        ids = list(range(first, first + 100_000))
        random.Random(first).shuffle(ids)
        return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array([f"p{i}" for i in ids])})
    table.append(rows(0))
    path = f"{table.metadata.location}/data/{uuid.uuid4()}-added.parquet"
    with table.io.new_output(path).create() as out:
        pq.write_table(rows(100_000), out, data_page_size=4096, dictionary_pagesize_limit=4096,
                       write_batch_size=1000, write_page_index=True)
    gzipped = f"{table.metadata.location}/data/{uuid.uuid4()}-gzip.parquet"
    with table.io.new_output(gzipped).create() as out:
        pq.write_table(rows(200_000), out, data_page_size=4096, dictionary_pagesize_limit=4096,
                       write_batch_size=1000, compression="gzip")
    others = []
    for first, codec in [(1_000_000, "lz4"), (1_100_000, "brotli")]:
        others.append(f"{table.metadata.location}/data/{uuid.uuid4()}-{codec}.parquet")
        with table.io.new_output(others[-1]).create() as out:
            pq.write_table(rows(first), out, data_page_size=4096, dictionary_pagesize_limit=4096,
                           write_batch_size=1000, compression=codec, write_page_index=True)
    table.add_files([path, gzipped, *others])


def migrated():
    """ns.migrated: a file PyArrow wrote without field ids (as a Hive table's are), registered
    with add_files (which sets the table's name mapping), then its column name renamed label
    (which adds label to the mapping) and one more file of ids 4 and 5 appended."""
    catalog.create_namespace_if_not_exists("ns")
    table = catalog.create_table("ns.migrated", schema=people([], []).schema)
    path = f"{table.metadata.location}/data/hive-{uuid.uuid4()}.parquet"
    with table.io.new_output(path).create() as out:
        pq.write_table(people([1, 2, 3], ["m1", "m2", "m3"]), out)
    table.add_files([path])
    with table.update_schema() as update:
        update.rename_column("name", "label")
    catalog.load_table("ns.migrated").append(people([4, 5], ["m4", "m5"]).rename_columns(["id", "label"]))


def shapes():
    """ns.shapes: v3 geometry and geography columns, which no writer here makes (PyIceberg 0.12
    writes no v3 table; Spark 4.0 has no geometry type): a v2 table of id, g and h (binary), a
    file PyArrow wrote with g and h annotated GEOMETRY and GEOGRAPHY (from GeoArrow's WKB
    extension type, planar and spherical; no min/max statistics) added with add_files, then the table's metadata written again
    as v3 with g `geometry` and h `geography(OGC:CRS84, spherical)`, the catalog pointed at it.
    Rows: (1, POINT(1 2), POINT(5 6)), (2, POINT(3 4), NULL), (3, NULL, POINT(7 8))."""
    import struct

    class Wkb(pa.ExtensionType):
        def __init__(self, metadata):
            self.metadata = metadata
            super().__init__(pa.binary(), "geoarrow.wkb")

        def __arrow_ext_serialize__(self):
            return self.metadata

        @classmethod
        def __arrow_ext_deserialize__(cls, storage_type, serialized):
            return Wkb(serialized)

    def points(metadata, xys):
        wkb = [None if p is None else struct.pack("<BIdd", 1, 1, *p) for p in xys]
        return pa.ExtensionArray.from_storage(Wkb(metadata), pa.array(wkb, pa.binary()))

    catalog.create_namespace_if_not_exists("ns")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("g", pa.binary()), pa.field("h", pa.binary())])
    table = catalog.create_table("ns.shapes", schema=schema)
    path = f"{table.metadata.location}/data/shapes-{uuid.uuid4()}.parquet"
    with table.io.new_output(path).create() as out:
        pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                                 "g": points(b"{}", [(1, 2), (3, 4), None]),
                                 "h": points(b'{"edges": "spherical"}', [(5, 6), None, (7, 8)])}), out)
    table.add_files([path])
    as_v3("shapes", 3, {"g": "geometry", "h": "geography(OGC:CRS84, spherical)"})


def as_v3(name, rows, types):
    """ns.`name`'s metadata written again as v3 (of `rows` rows so far), its columns given
    `types` (column name: v3 type) in every schema, and the SQL catalog pointed at it: no writer
    here commits a v3 table."""
    import sqlite3

    table = catalog.load_table(f"ns.{name}")
    with table.io.new_input(table.metadata_location).open() as f:
        metadata = json.load(f)
    metadata["format-version"] = 3
    metadata["next-row-id"] = rows
    for s in metadata["schemas"]:
        for field in s["fields"]:
            field["type"] = types.get(field["name"], field["type"])
    location = f"{table.metadata.location}/metadata/v3-{uuid.uuid4()}.metadata.json"
    with table.io.new_output(location).create() as out:
        out.write(json.dumps(metadata).encode())
    db = sqlite3.connect(f"{directory}/catalog.db")
    db.execute("update iceberg_tables set metadata_location = ?, previous_metadata_location = ? "
               "where table_namespace = 'ns' and table_name = ?", (location, table.metadata_location, name))
    db.commit()


def variants():
    """ns.variants: a v3 variant column, which PyIceberg 0.12 does not write: DuckDB 1.5 writes
    a file of id and v, v variants shredded where it chooses (objects with a and b, and values
    of other shapes left whole), added to a v2 table of id (long) and v (binary, a
    placeholder) by a fast append of its data file, then the table's metadata written again as
    v3 with v `variant` and the catalog pointed at it. Prints DuckDB's own reading of v as
    JSON, by id, as "variants"."""
    import duckdb

    catalog.create_namespace_if_not_exists("ns")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.binary())])
    table = catalog.create_table("ns.variants", schema=schema)
    path = f"{table.metadata.location}/data/variants-{uuid.uuid4()}.parquet"
    values = ['{"a": 1, "b": "x"}', '{"a": 2}', None, '[1, 2, 3]', '"text"', '12.5',
              '{"a": {"deep": [true, null]}, "b": "y"}', 'null']
    literals = ", ".join(f"({i + 1}::bigint, {'null' if v is None else repr(v) + '::json::variant'})"
                     for i, v in enumerate(values))
    db = duckdb.connect()
    local = path.removeprefix("file://")
    os.makedirs(os.path.dirname(local), exist_ok=True)
    db.sql(f"copy (select * from (values {literals}) t(id, v)) to '{local}' (format parquet, field_ids {{id: 1, v: 2}})")
    read = db.sql(f"select id, v::json::varchar from read_parquet('{local}') order by id").fetchall()
    with table.transaction() as tx:
        with tx.update_snapshot().fast_append() as append:
            data_file = DataFile.from_args(content=DataFileContent.DATA, file_path=path,
                                           file_format=FileFormat.PARQUET, partition=Record(),
                                           record_count=len(values), file_size_in_bytes=os.path.getsize(local))
            data_file.spec_id = table.metadata.default_spec_id
            append.append_data_file(data_file)
    as_v3("variants", len(values), {"v": "variant"})
    rows["variants"] = read


def stray():
    """ns.stray: a table whose location (metadata and data) is outside the catalog's warehouse,
    which Sieve refuses to read."""
    table = catalog.create_table("ns.stray", schema=people([], []).schema, location=f"file://{directory}-stray/t")
    table.append(people([1], ["s"]))


def mixed():
    catalog.create_namespace_if_not_exists("Mixed")
    table = catalog.create_table("Mixed.Orders", schema=pa.schema([pa.field("k", pa.int64())]))
    table.append(pa.table({"k": pa.array([1, 2, 3], pa.int64())}))


def big():
    catalog.create_namespace_if_not_exists("ns")
    ids = pa.array(range(200_000), pa.int64())
    catalog.create_table("ns.big", schema=pa.schema([pa.field("id", pa.int64())])).append(pa.table({"id": ids}))


rows = {}
{"make": make, "append": append, "keys": keys, "grouped": grouped, "more_keys": more_keys, "key_file": key_file,
 "compact_keys": compact_keys, "big": big,
 "rename_again": rename_again, "paged": paged, "upserts": upserts, "promoted": promoted, "promote": promote,
 "defaults": defaults, "nested": nested, "migrated": migrated, "shapes": shapes,
 "drop_name": drop_name, "upsert_more": upsert_more, "variants": variants, "stray": stray, "mixed": mixed}[sys.argv[2]]()
for name in ["ns.people", "ns.empty", "ns.keys", "ns.promoted", "ns.defaults", "ns.deep.t", "ns.migrated"]:
    if not catalog.table_exists(name):
        continue
    loaded = catalog.load_table(name)
    table = loaded.scan().to_arrow().sort_by("id")
    snapshot = loaded.current_snapshot()
    manifests = len(snapshot.manifests(loaded.io)) if snapshot else 0
    rows[name] = {"count": table.num_rows, "ids": table.column("id").to_pylist(), "manifests": manifests,
                  "rows": table.to_pylist() if name in ["ns.defaults", "ns.migrated"] else None,
                  "metadata": loaded.metadata_location,
                  "files": sorted(task.file.file_path for task in loaded.scan().plan_files())}
print(json.dumps(rows))
