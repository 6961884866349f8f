"""`skip_done`: drop the rows an earlier run already answered (an anti-join on the row id)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from holysheep._exceptions import InvalidRequestError
from holysheep.integrations.ray._rows import RowSpec

if TYPE_CHECKING:
    import pyarrow as pa
    import ray.data

__all__ = ["done_ids", "drop_done", "read_results"]


def read_results(done: object) -> ray.data.Dataset:
    """Earlier results: a `ray.data.Dataset`, or a path (file or folder) of Parquet or JSON Lines files."""
    import ray.data

    if isinstance(done, ray.data.Dataset):
        return done
    if not isinstance(done, (str, os.PathLike)):
        raise InvalidRequestError(f"skip_done must be a path or a ray.data.Dataset, got {type(done).__name__}.",
                                  field="skip_done")
    path = Path(done)
    if not path.exists():
        raise InvalidRequestError(f"skip_done={str(path)!r} does not exist; pass the folder or file that an "
                                  "earlier run wrote.", field="skip_done")
    files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
    parquet = [p for p in files if p.suffix == ".parquet"]
    jsonl = [p for p in files if p.suffix in (".json", ".jsonl")]
    if parquet:
        return ray.data.read_parquet([str(p) for p in parquet])
    if jsonl:
        return ray.data.read_json([str(p) for p in jsonl], lines=True)
    raise InvalidRequestError(f"skip_done={str(path)!r} holds no .parquet, .json or .jsonl files.", field="skip_done")


def done_ids(done: object, spec: RowSpec) -> pa.Array:
    """The ids of the earlier results that succeeded (`error` null), as an Arrow string array.

    Rows without `error`/`response` columns are taken as done (any dataset of finished rows works).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    ids: set[str] = set()
    batches: Any = read_results(done).iter_batches(batch_format="pyarrow", batch_size=65_536)
    for table in batches:
        if "error" in table.column_names:
            table = table.filter(pc.is_null(table["error"]))
        if spec.id_column in table.column_names and table.num_rows:
            column = table[spec.id_column]
            if column.null_count == 0:
                ids.update(str(v) for v in column.to_pylist())
                continue
        ids.update(spec.row_id(row) for row in table.to_pylist())
    return pa.array(sorted(ids), type=pa.string())


def _keep_missing(table: pa.Table, *, done: pa.Array, spec: RowSpec) -> pa.Table:
    import pyarrow as pa
    import pyarrow.compute as pc

    if spec.id_column in table.column_names and table[spec.id_column].null_count == 0:
        ids = pc.cast(table[spec.id_column], pa.string())
    else:
        ids = pa.array([spec.row_id(row) for row in table.to_pylist()], type=pa.string())
    return table.filter(pc.invert(pc.is_in(ids, value_set=done)))


def drop_done(ds: ray.data.Dataset, done: object, spec: RowSpec) -> ray.data.Dataset:
    """`ds` without the rows whose id is among the earlier results' successful ids."""
    ids = done_ids(done, spec)
    if len(ids) == 0:
        return ds
    keep: Any = _keep_missing  # Ray types map_batches with its own Any-typed batch unions
    return ds.map_batches(keep, fn_kwargs={"done": ids, "spec": spec}, batch_format="pyarrow",
                          zero_copy_batch=True)
