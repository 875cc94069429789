# Adds one position-delete file (deleting row `pos` of one data file) to an existing v2 table
# written by make_table.py. PyIceberg 0.12 has no public API for this (it only does copy-on-write),
# so we hand-write the delete manifest with its internal writer classes.
import os, sys, uuid, pyarrow as pa, pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import (DataFile, DataFileContent, FileFormat, ManifestContent, ManifestEntry,
                                ManifestEntryStatus, ManifestWriterV2, write_manifest_list)
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate
from pyiceberg.typedef import Record

class DeleteManifestWriter(ManifestWriterV2):
    def content(self): return ManifestContent.DELETES
    @property
    def _meta(self): return {**super()._meta, "content": "deletes"}

wh = os.path.abspath(sys.argv[1]); pos = int(sys.argv[2]) if len(sys.argv) > 2 else 0
cat = SqlCatalog("sieve_test", uri=f"sqlite:///{wh}/catalog.db", warehouse=f"file://{wh}")
t = cat.load_table("ns.people"); parent = t.current_snapshot(); md = t.metadata
target = sorted(task.file.file_path for task in t.scan().plan_files())[0]
fid = lambda i: {b"PARQUET:field_id": str(i).encode()}
schema = pa.schema([pa.field("file_path", pa.string(), False, fid(2147483546)), pa.field("pos", pa.int64(), False, fid(2147483545))])
del_path = f"{md.location}/data/{uuid.uuid4()}-pos-deletes.parquet"
pq.write_table(pa.table({"file_path": [target], "pos": [pos]}, schema=schema), del_path.removeprefix("file://"))
df = DataFile.from_args(content=DataFileContent.POSITION_DELETES, file_path=del_path, file_format=FileFormat.PARQUET,
                        partition=Record(), record_count=1, file_size_in_bytes=os.path.getsize(del_path.removeprefix("file://")),
                        referenced_data_file=target)
df.spec_id = 0
snap_id = uuid.uuid4().int & ((1 << 63) - 1); seq = md.next_sequence_number()
out = t.io.new_output(f"{md.location}/metadata/{uuid.uuid4()}-m-del.avro")
with DeleteManifestWriter(md.spec(), md.schema(), out, snap_id, "deflate") as w:
    w.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snap_id, data_file=df))
new_manifests = [w.to_manifest_file()] + parent.manifests(t.io)
ml_path = f"{md.location}/metadata/snap-{snap_id}-0-{uuid.uuid4()}.avro"
with write_manifest_list(format_version=2, output_file=t.io.new_output(ml_path), snapshot_id=snap_id,
                         parent_snapshot_id=parent.snapshot_id, sequence_number=seq, avro_compression="deflate") as lw:
    lw.add_manifests(new_manifests)
snap = Snapshot(snapshot_id=snap_id, parent_snapshot_id=parent.snapshot_id, sequence_number=seq, manifest_list=ml_path,
                summary=Summary(Operation.DELETE, **{"added-delete-files": "1", "added-position-deletes": "1"}), schema_id=md.current_schema_id)
cat.commit_table(t, requirements=(AssertRefSnapshotId(snapshot_id=parent.snapshot_id, ref="main"),),
                 updates=(AddSnapshotUpdate(snapshot=snap), SetSnapshotRefUpdate(snapshot_id=snap_id, parent_snapshot_id=parent.snapshot_id, ref_name="main", type=SnapshotRefType.BRANCH)))
t = cat.load_table("ns.people"); print(target, "pos", pos, "->", sorted(t.scan().to_arrow().column("id").to_pylist()))
