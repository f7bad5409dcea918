"""The tuning database: every candidate the search evaluated, per (program, sizes, device).

SQLite in WAL mode so several `liftkit explore` processes (one per device, say) can write to the
same file: each candidate is one autocommitted INSERT, readers never block writers, and a busy
timeout absorbs the short write locks. The key is a sha256 over the normalised high-level program
text, the input sizes and the device fingerprint, because a tuned derivation is only meaningful
for exactly that triple; each candidate also records the backend it was measured on (OpenCL or
CUDA: a search over both, `explore --backend any`, stores each candidate under the key of the
device it won on). An explicit object (no module-level connection) so tests and processes each
open their own.

Reading never writes: a lookup (`run --tuned`, `bench`) opens the file read-only, and without
a writer present (no `-wal` file beside it) as immutable, so a committed database is neither
rewritten nor given `-wal`/`-shm` files. A database from before the backend column gets it
when first opened for writing (rows of `cuda|` devices say CUDA, all others OpenCL); read
as it is, the same is derived in the query.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

from liftkit.rewrite.core import Choice

ENV_DB = "LIFTKIT_TUNING_DB"
BACKENDS = ("opencl", "cuda")
VALIDITIES = ("ok", "wrong-result", "compile-error", "filtered", "runtime-error", "skipped")
BUSY_TIMEOUT_S = 30.0
# columns added after databases were written (and committed): added on first write, derived on read
MIGRATED = {"candidates": {"backend"}}
# the backend of a row from before the column: CUDA for a key of a CUDA device, else OpenCL
_OLD_BACKEND = ("(CASE WHEN (SELECT k.device FROM keys k WHERE k.key = c.key) LIKE 'cuda|%' "
                "THEN 'cuda' ELSE 'opencl' END)")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS keys (
    key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    program TEXT NOT NULL,
    sizes TEXT NOT NULL,
    device TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS searches (
    search_id TEXT PRIMARY KEY,
    key TEXT NOT NULL,
    started REAL NOT NULL,
    settings TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS candidates (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    search_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    step INTEGER NOT NULL,
    derivation TEXT NOT NULL,
    low_level TEXT NOT NULL,
    params TEXT NOT NULL,
    time REAL,
    validity TEXT NOT NULL,
    reason TEXT NOT NULL,
    source TEXT NOT NULL,
    created REAL NOT NULL,
    backend TEXT NOT NULL DEFAULT 'opencl'
);
CREATE INDEX IF NOT EXISTS candidates_best ON candidates (key, validity, time);
CREATE INDEX IF NOT EXISTS candidates_order ON candidates (key, search_id, seq);
CREATE TABLE IF NOT EXISTS finished (
    search_id TEXT PRIMARY KEY,
    stop_reason TEXT NOT NULL,
    finished REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS device_profiles (
    device TEXT NOT NULL,
    nbytes INTEGER NOT NULL,
    bandwidth_gbs REAL NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (device, nbytes)
);
"""


def default_db_path() -> Path:
    """`$LIFTKIT_TUNING_DB`, else `~/.cache/liftkit/tuning.sqlite`."""
    env = os.environ.get(ENV_DB)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "liftkit" / "tuning.sqlite"


def read_only_connection(path: Path) -> sqlite3.Connection:
    """A connection that never writes the file or beside it: read-only, and immutable where no
    writer is present (no -wal file; else SQLite would create -wal and -shm files to read a
    WAL database)."""
    wal = path.with_name(path.name + "-wal")
    mode = "ro" if wal.exists() else "ro&immutable=1"
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode={mode}", uri=True,
                           timeout=BUSY_TIMEOUT_S, isolation_level=None)


def sizes_text(sizes: Mapping[str, int]) -> str:
    """Canonical text of a size binding (sorted, so the key does not depend on dict order)."""
    return json.dumps({k: int(v) for k, v in sorted(sizes.items())}, separators=(",", ":"))


def tuning_key(program_text: str, sizes: Mapping[str, int], device_fingerprint: str) -> str:
    """sha256 of (normalised program text, sizes, device fingerprint), NUL-separated."""
    h = hashlib.sha256()
    for part in (program_text, sizes_text(sizes), device_fingerprint):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


@dataclass(frozen=True)
class Record:
    """One evaluated candidate. `time` is the median kernel time in seconds (None unless ok);
    `reason` says why a candidate is not ok (or notes about an ok one, e.g. a skipped check)."""

    derivation: tuple[Choice, ...]
    low_level: str
    validity: str
    time: Optional[float] = None
    reason: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""
    step: int = 0  # derivation steps fixed by the search when this was evaluated
    seq: int = 0  # position in its search
    search_id: str = ""
    key: str = ""
    created: float = 0.0
    backend: str = "opencl"  # where it was built and timed: "opencl" or "cuda"

    def __post_init__(self) -> None:
        if self.validity not in VALIDITIES:
            raise ValueError(f"validity must be one of {VALIDITIES}, got {self.validity!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")

    @property
    def ok(self) -> bool:
        return self.validity == "ok" and self.time is not None

    def derivation_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.derivation]

    def label(self) -> str:
        """`ok 1.23 ms` or `filtered (local memory ...)`, for summaries."""
        if self.ok:
            return f"ok {self.time * 1e3:.4g} ms"  # type: ignore[operator]
        return f"{self.validity} ({self.reason})" if self.reason else self.validity


@dataclass(frozen=True)
class KeyInfo:
    key: str
    name: str
    program: str
    sizes: dict[str, int]
    device: str


@dataclass(frozen=True)
class SearchInfo:
    search_id: str
    key: str
    started: float
    settings: dict[str, Any]
    candidates: int


class TuningDB:
    """A tuning database file. Opens its connection lazily (one per process that uses it)."""

    def __init__(self, path: Union[str, Path, None] = None) -> None:
        self.path = Path(path).expanduser() if path is not None else default_db_path()
        self._conn: Optional[sqlite3.Connection] = None
        self._pid = -1
        self._reader: Optional[sqlite3.Connection] = None
        self._reader_pid = -1
        self._columns = ""

    def __repr__(self) -> str:
        return f"TuningDB({str(self.path)!r})"

    # -- connection -------------------------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection, (re)opened in this process; autocommit, WAL, busy timeout."""
        if self._conn is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
                conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
                self._retry(lambda: conn.execute("PRAGMA journal_mode = WAL"))
                conn.execute("PRAGMA synchronous = NORMAL")
                self._retry(lambda: conn.executescript(_SCHEMA))
                self._retry(lambda: _migrate(conn))
            except sqlite3.Error as err:  # a user's path problem, reported like other OS errors
                raise OSError(f"cannot open the tuning database {self.path}: {err}") from None
            self._close_reader()
            self._conn, self._pid = conn, os.getpid()
            self._columns = _columns(conn)
        return self._conn

    @property
    def reader(self) -> sqlite3.Connection:
        """A connection for queries: the writing one when this process opened it, else a
        read-only one (immutable where no writer is present: no -wal file). A file that does
        not exist yet is created as by a write (an empty database answers every query)."""
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        if self._reader is None or self._reader_pid != os.getpid():
            if not self.path.is_file():
                return self.conn
            try:
                conn = read_only_connection(self.path)
                columns = _columns(conn)
            except sqlite3.Error as err:
                raise OSError(f"cannot read the tuning database {self.path}: {err}") from None
            self._reader, self._reader_pid, self._columns = conn, os.getpid(), columns
        return self._reader

    def _close_reader(self) -> None:
        if self._reader is not None and self._reader_pid == os.getpid():
            self._reader.close()
        self._reader = None

    @staticmethod
    def _retry(op: Any, attempts: int = 20) -> Any:
        """Switching to WAL and creating the schema take an exclusive lock that another process
        may hold for a moment even with a busy timeout (SQLite does not wait on some of them)."""
        for k in range(attempts):
            try:
                return op()
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or k == attempts - 1:
                    raise
                time.sleep(0.05 * (k + 1))
        return None

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None
        self._close_reader()

    def __enter__(self) -> "TuningDB":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- writing ----------------------------------------------------------------------------------

    def register_key(self, key: str, name: str, program_text: str, sizes: Mapping[str, int],
                     device_fingerprint: str) -> None:
        """Remember what a key stands for (first writer wins; the key determines the rest)."""
        self._retry(lambda: self.conn.execute(
            "INSERT OR IGNORE INTO keys (key, name, program, sizes, device, created) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (key, name, program_text, sizes_text(sizes), device_fingerprint, time.time())))

    def start_search(self, key: str, settings: Mapping[str, Any]) -> str:
        """A new search id for `key` (candidates of one search are ordered by their seq)."""
        search_id = uuid.uuid4().hex
        self._retry(lambda: self.conn.execute(
            "INSERT INTO searches (search_id, key, started, settings) VALUES (?, ?, ?, ?)",
            (search_id, key, time.time(), json.dumps(dict(settings), sort_keys=True, default=str))))
        return search_id

    def insert(self, record: Record) -> Record:
        """One INSERT per candidate (its own short transaction); returns it with `created` set."""
        if not record.key or not record.search_id:
            raise ValueError("a record needs its key and search_id before it is stored")
        rec = replace(record, created=record.created or time.time())
        self._retry(lambda: self.conn.execute(
            "INSERT INTO candidates (key, search_id, seq, step, derivation, low_level, params, time, "
            "validity, reason, source, created, backend) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (rec.key, rec.search_id, rec.seq, rec.step, json.dumps(rec.derivation_json()),
             rec.low_level, json.dumps(dict(rec.params), sort_keys=True, default=str), rec.time,
             rec.validity, rec.reason, rec.source, rec.created, rec.backend)))
        return rec

    def finish_search(self, search_id: str, stop_reason: str) -> None:
        """Mark a search as run to its end (an interrupted one has no mark: it can be resumed)."""
        self._retry(lambda: self.conn.execute(
            "INSERT OR REPLACE INTO finished (search_id, stop_reason, finished) VALUES (?, ?, ?)",
            (search_id, stop_reason, time.time())))

    def is_finished(self, search_id: str) -> bool:
        return self.reader.execute("SELECT 1 FROM finished WHERE search_id = ?",
                                 (search_id,)).fetchone() is not None

    def bandwidth(self, device: str, nbytes: int) -> Optional[float]:
        """The device's copy bandwidth measured at `nbytes` (GB/s), if recorded."""
        if not self._has_table("device_profiles"):
            return None
        row = self.reader.execute("SELECT bandwidth_gbs FROM device_profiles WHERE device = ? AND "
                                "nbytes = ?", (device, int(nbytes))).fetchone()
        return float(row[0]) if row else None

    def set_bandwidth(self, device: str, nbytes: int, gbs: float) -> None:
        self._retry(lambda: self.conn.execute(
            "INSERT OR REPLACE INTO device_profiles (device, nbytes, bandwidth_gbs, created) "
            "VALUES (?, ?, ?, ?)", (device, int(nbytes), float(gbs), time.time())))

    # -- queries ----------------------------------------------------------------------------------

    def _has_table(self, name: str) -> bool:
        return self.reader.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                   (name,)).fetchone() is not None

    def _select(self) -> str:
        conn = self.reader
        if not self._columns:
            self._columns = _columns(conn)
        return self._columns

    def best(self, key: str) -> Optional[Record]:
        """The fastest valid candidate of any search for `key` (ties: the earliest)."""
        cols = self._select()
        row = self.reader.execute(
            f"SELECT {cols} FROM candidates c WHERE key = ? AND validity = 'ok' AND time IS NOT NULL "
            "ORDER BY time ASC, id ASC LIMIT 1", (key,)).fetchone()
        return _record(row) if row else None

    def best_measured(self, key: str, backend: Optional[str] = None) -> Optional[Record]:
        """The fastest valid time measured on `key`'s device: its own candidates (`best`) and
        those a search over both backends filed under the other backend's key because they
        were faster there, at the time this device's backend gave them (`params.backends`;
        the record keeps the winner's time and backend in `params["won_elsewhere"]`). What a
        one-backend lookup wants: the best candidate found for that backend, not only the ones
        it won. `backend`: the key's (default: CUDA for a `cuda|` device, else OpenCL)."""
        own = self.best(key)
        if backend is None:
            row = self.reader.execute("SELECT device FROM keys WHERE key = ?", (key,)).fetchone()
            if row is None:
                return own
            backend = "cuda" if str(row[0]).startswith("cuda|") else "opencl"
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        path = f"$.backends.{backend}"
        # the searches this key took part in: filed under it, or holding a candidate of it
        found = self.reader.execute(
            f"SELECT {self._select()}, json_extract(c.params, ?) FROM candidates c "
            "WHERE c.key != ? AND c.validity = 'ok' AND c.search_id IN "
            "(SELECT search_id FROM searches WHERE key = ? "
            " UNION SELECT search_id FROM candidates WHERE key = ?) "
            "AND json_extract(c.params, ?) = 'ok' AND json_extract(c.params, ?) IS NOT NULL "
            "ORDER BY json_extract(c.params, ?) ASC, c.id ASC LIMIT 1",
            (path + ".time", key, key, key, path + ".validity", path + ".time",
             path + ".time")).fetchone()
        if found is None:
            return own
        t = float(found[-1])
        if own is not None and own.time is not None and own.time <= t:
            return own
        rec = _record(found[:-1])
        return replace(rec, time=t, backend=backend, key=key, params=dict(rec.params) | {
            "won_elsewhere": {"backend": rec.backend, "time": rec.time, "key": rec.key}})

    def candidates(self, key: str, search_id: Optional[str] = None) -> list[Record]:
        """Candidates in search order: one search's (by seq; a search over both backends
        stores each candidate under its backend's key, so all of them, whatever their key), or
        every search's for the key, the searches in the order they started."""
        cols = self._select()
        if search_id is not None:
            rows = self.reader.execute(
                f"SELECT {cols} FROM candidates c WHERE search_id = ? ORDER BY seq, id",
                (search_id,)).fetchall()
        else:
            rows = self.reader.execute(
                f"SELECT {cols} FROM candidates c LEFT JOIN searches s USING (search_id) "
                "WHERE c.key = ? ORDER BY s.started, c.search_id, c.seq, c.id", (key,)).fetchall()
        return [_record(r) for r in rows]

    def searches(self, key: str) -> list[SearchInfo]:
        rows = self.reader.execute(
            "SELECT s.search_id, s.key, s.started, s.settings, "
            "(SELECT COUNT(*) FROM candidates c WHERE c.search_id = s.search_id AND c.key = s.key) "
            "FROM searches s WHERE s.key = ? ORDER BY s.started", (key,)).fetchall()
        return [SearchInfo(r[0], r[1], r[2], json.loads(r[3]), r[4]) for r in rows]

    def key_info(self, key: str) -> Optional[KeyInfo]:
        row = self.reader.execute("SELECT key, name, program, sizes, device FROM keys WHERE key = ?",
                                (key,)).fetchone()
        return KeyInfo(row[0], row[1], row[2], json.loads(row[3]), row[4]) if row else None

    def keys(self) -> Iterator[KeyInfo]:
        for row in self.reader.execute("SELECT key, name, program, sizes, device FROM keys ORDER BY created"):
            yield KeyInfo(row[0], row[1], row[2], json.loads(row[3]), row[4])

    def count(self, key: Optional[str] = None) -> int:
        if key is None:
            return int(self.reader.execute("SELECT COUNT(*) FROM candidates").fetchone()[0])
        return int(self.reader.execute("SELECT COUNT(*) FROM candidates WHERE key = ?",
                                     (key,)).fetchone()[0])


_COLUMNS = ("c.derivation, c.low_level, c.validity, c.time, c.reason, c.params, c.source, c.step, "
            "c.seq, c.search_id, c.key, c.created")


def _has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(r[1] == column for r in conn.execute(f"PRAGMA table_info({table})"))


def _columns(conn: sqlite3.Connection) -> str:
    """The SELECT list of a record on this connection (the backend derived where the file
    predates its column)."""
    backend = "c.backend" if _has_column(conn, "candidates", "backend") else _OLD_BACKEND
    return f"{_COLUMNS}, {backend}"


def _migrate(conn: sqlite3.Connection) -> None:
    """Add the columns of MIGRATED to a database written before them, in one transaction
    (another process migrating at the same moment: the second finds the column there)."""
    if _has_column(conn, "candidates", "backend"):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if not _has_column(conn, "candidates", "backend"):
            conn.execute("ALTER TABLE candidates ADD COLUMN backend TEXT NOT NULL DEFAULT 'opencl'")
            conn.execute("UPDATE candidates SET backend = 'cuda' WHERE key IN "
                         "(SELECT key FROM keys WHERE device LIKE 'cuda|%')")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _record(row: Sequence[Any]) -> Record:
    deriv, low, validity, t, reason, params, source, step, seq, sid, key, created, backend = row
    return Record(derivation=tuple(Choice.from_json(c) for c in json.loads(deriv)), low_level=low,
                  validity=validity, time=t, reason=reason, params=json.loads(params),
                  source=source, step=step, seq=seq, search_id=sid, key=key, created=created,
                  backend=backend if backend in BACKENDS else "opencl")
