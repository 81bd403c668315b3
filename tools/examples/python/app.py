"""`csv_rows`: a Cordon tool written in Python, built with componentize-py.

It reads a CSV file and emits every data row as one JSON item, an object keyed
by the header row. The host pages those items to the client; the tool only has
to keep three promises of the contract (wit/tool.wit):

1. A chunk never holds more than the budget: one item per chunk, and an item
   whose JSON text is longer than `budget.bytes` goes out in pieces, cut on a
   UTF-8 character boundary, every piece but the last marked `continued`.
2. Every chunk carries a `resume` position, and `open(args, resume)` yields
   exactly the chunks that would have followed that one, even in the middle of
   a split item. Here a position is a small JSON object:
       {"row": N, "offset": B}          before data row N + 1 (N rows emitted),
                                        which starts at byte B of the file;
       {"row": N, "offset": B, "in": K}  K bytes into the JSON text of that row.
   These are the semantics of the Rust SDK's `items::Items` (tools/sdk/src/items.rs).
3. Errors are a code from the WIT's `error-code` plus a sentence, never a trap.

The tool sees only the directories the host preopened for it (read-only).
"""

import csv
import errno
import json
import os
import posixpath

import wit_world
from componentize_py_types import Err
from wit_world.exports import tool
from wit_world.imports import cordon_tool_types as types
from wit_world.imports import policy, preopens, progress
from wit_world.imports.wasi_filesystem_types import PathFlags

NAME = "csv_rows"
VERSION = "0.1.0"  # bound into every cursor: bump it when the output changes

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "The CSV file: relative to the first granted directory, or absolute inside one.",
        },
        "columns": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "uniqueItems": True,
            "description": "Keep only these columns, in this order. Default: every column.",
        },
        "delimiter": {
            "type": "string",
            "minLength": 1,
            "maxLength": 1,
            "description": "The field separator, one character. Default: ','.",
        },
    },
    "required": ["path"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The file read (absolute)."},
        "size": {"type": "integer", "description": "The file's size in bytes."},
        "columns": {"type": "array", "items": {"type": "string"}, "description": "The keys of every row."},
        "rows_so_far": {"type": "integer", "description": "Data rows read so far (a page may end before the last)."},
    },
    "required": ["path", "size", "columns", "rows_so_far"],
}

DESCRIPTION = (
    "Read a CSV file and return each data row as one JSON object keyed by the header row "
    "(a missing field is null; fields beyond the header are listed under \"_extra\"). "
    "Fields are strings, exactly as in the file; quoted fields may hold the delimiter and newlines. "
    "Blank lines are skipped. The file must be UTF-8. Pass `columns` to keep only some columns."
)

# The longest field the csv module accepts (its default is 128 KiB).
csv.field_size_limit(64 << 20)

# How often (in rows) to tell the host how far we are; reporting is cheap.
PROGRESS_EVERY = 1000


def fail(code, message):
    """The exception componentize-py turns into the `error` arm of a WIT result.
    The message is cut short if it echoes a huge argument: the host refuses
    anything over its `--max-info-bytes`."""
    if len(message) > 2000:
        message = message[:2000] + "… [cut]"
    return Err(types.Error(code, message))


def os_error(what, err):
    """Maps a filesystem error on `what` to the closest WIT error code."""
    if isinstance(err, FileNotFoundError):
        return fail(types.ErrorCode.NOT_FOUND, f"{what} does not exist")
    if isinstance(err, PermissionError) or err.errno == getattr(errno, "ENOTCAPABLE", None):
        return fail(
            types.ErrorCode.PERMISSION_DENIED,
            f"{what} cannot be opened: access denied, or a symlink on the way leads outside the granted directories",
        )
    if isinstance(err, IsADirectoryError):
        return fail(types.ErrorCode.INVALID_ARGUMENT, f"{what} is a directory, not a CSV file")
    return fail(types.ErrorCode.IO, f"{what} could not be read: {err.strerror or err}")


def guarded(method):
    """Turns any exception other than a WIT error into an `internal` error, so a
    bug in the tool is reported instead of trapping the call."""

    def wrapper(*args):
        try:
            return method(*args)
        except Err:
            raise
        except OSError as err:
            raise os_error("the file", err)
        except Exception as err:  # a bug; the message never carries file content
            raise fail(types.ErrorCode.INTERNAL, f"{NAME} failed: {type(err).__name__}")

    return wrapper


# --- Where the file is ----------------------------------------------------------


def resolve(dirs, given):
    """Turns the client's `path` into an absolute path inside a granted directory.

    `dirs` are the preopens as (descriptor, absolute path). Returns the path,
    the preopen holding it and the path relative to that preopen. The sandbox
    is the real boundary (`..` and symlinks out of a preopen do not open); this
    check gives a clear answer first, naming the directory that lacks a grant.
    """
    if "\0" in given:
        raise fail(types.ErrorCode.INVALID_ARGUMENT, "`path` contains a NUL byte")
    roots = [root for _, root in dirs]
    if not posixpath.isabs(given) and not roots:
        raise fail(
            types.ErrorCode.PERMISSION_DENIED,
            f"`{given}` is relative, but this tool has no grant for any directory; "
            "install it with `--grant ro:DIR` to let it read DIR",
        )
    path = posixpath.normpath(posixpath.join(roots[0], given) if roots else given)
    # The preopen holding `path`: compare whole components, longest root first,
    # so that /data-evil is never taken for being inside /data.
    for descriptor, root in sorted(dirs, key=lambda d: len(d[1]), reverse=True):
        inside = root.rstrip("/") + "/"
        if path == root or path.startswith(inside):
            rule = policy.check(path, True)
            if rule is not None:
                raise fail(
                    types.ErrorCode.PERMISSION_DENIED,
                    f"`{given}` is denied by the server's rule `{rule}`; no tool may open it",
                )
            return path, descriptor, posixpath.relpath(path, root)
    directory = posixpath.dirname(path)
    raise fail(
        types.ErrorCode.PERMISSION_DENIED,
        f"`{given}` is in {directory}, and this tool has no grant for that directory "
        f"(it may read: {', '.join(roots) or 'nothing'}); install it with `--grant ro:{directory}` to let it read there",
    )


# --- The rows ------------------------------------------------------------------


class Rows:
    """Data rows of a CSV file, read from a byte offset, each with the offset just
    after it. Reading never goes further than the row it returns, so that
    offset is an exact place to reopen at."""

    def __init__(self, file, delimiter, offset):
        file.seek(offset)
        self.file = file
        self.offset = offset  # bytes consumed so far
        self.reader = csv.reader(self._lines(), delimiter=delimiter, strict=True)

    def _lines(self):
        # csv.reader pulls one physical line at a time, and only as many as the
        # record needs (a quoted field can span lines), so after each record
        # `self.offset` is exactly where the next one starts.
        for raw in iter(self.file.readline, b""):
            start = self.offset
            self.offset += len(raw)
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise fail(
                    types.ErrorCode.INVALID_ARGUMENT,
                    f"the file is not UTF-8 (byte {start + err.start}); only UTF-8 CSV is supported",
                )

    def next(self):
        """The next non-blank record as a list of fields, or None at the end."""
        while True:
            start = self.offset
            try:
                record = next(self.reader, None)
            except csv.Error as err:
                raise fail(types.ErrorCode.INVALID_ARGUMENT, f"malformed CSV in the record at byte {start}: {err}")
            if record != []:  # [] is a blank line
                return record


def read_header(file, delimiter):
    """The header row (BOM stripped) and the byte offset of the first data row."""
    rows = Rows(file, delimiter, 0)
    header = rows.next() or []
    if header and header[0].startswith("\ufeff"):
        header[0] = header[0][1:]
    seen = set()
    for name in header:
        if name in seen:
            raise fail(
                types.ErrorCode.INVALID_ARGUMENT,
                f"the header names column `{name}` twice, so rows cannot be keyed by it",
            )
        seen.add(name)
    return header, rows.offset


# --- Resume positions ----------------------------------------------------------


def encode(row, offset, inside=0):
    position = {"row": row, "offset": offset}
    if inside:
        position["in"] = inside
    return json.dumps(position, separators=(",", ":"))


def decode(resume):
    """(rows before, byte offset, bytes into the next item) from a resume position."""
    try:
        position = json.loads(resume)
        row, offset, inside = position["row"], position["offset"], position.get("in", 0)
        if all(type(n) is int and n >= 0 for n in (row, offset, inside)) and set(position) <= {"row", "offset", "in"}:
            return row, offset, inside
    except (ValueError, TypeError, KeyError):
        pass
    raise fail(types.ErrorCode.INVALID_ARGUMENT, f"malformed resume position `{resume[:100]}`")


def is_char_boundary(data, index):
    """True when byte `index` of UTF-8 `data` starts a character (or is the end)."""
    return index >= len(data) or (data[index] & 0xC0) != 0x80


def rotate_left(value, bits):
    """`value` rotated left as a 64-bit integer."""
    return ((value << bits) | (value >> (64 - bits))) & 0xFFFF_FFFF_FFFF_FFFF


# --- The stream the host pulls -------------------------------------------------


class ChunkStream(tool.ChunkStream):
    """One call: the rows of one file, one JSON item per chunk."""

    def __init__(self, args, resume):
        if not isinstance(args.get("path"), str):
            raise fail(types.ErrorCode.INVALID_ARGUMENT, "`path` must be a string")
        delimiter = args.get("delimiter", ",")
        if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in '"\r\n':
            raise fail(types.ErrorCode.INVALID_ARGUMENT, "`delimiter` must be one character other than a quote or newline")
        self.dirs = preopens.get_directories()  # (descriptor, absolute path) for each grant
        self.given = args["path"]
        self.path, self.dir, self.relative = resolve(self.dirs, self.given)
        try:
            self.file = open(self.path, "rb")
            self.size = os.fstat(self.file.fileno()).st_size
        except OSError as err:
            raise os_error(f"`{self.given}`", err)

        header, first_row = read_header(self.file, delimiter)
        wanted = args.get("columns")
        if wanted is None:
            wanted = header
        missing = [name for name in wanted if name not in header]
        if missing:
            raise fail(
                types.ErrorCode.INVALID_ARGUMENT,
                f"no column named {', '.join(f'`{m}`' for m in missing)}; the header has: {', '.join(header)}",
            )
        self.header = header
        self.columns = wanted
        self.all_columns = "columns" not in args

        # Where to start: the beginning, a row boundary, or inside a row's item.
        self.rows_done, offset, inside = decode(resume) if resume is not None else (0, first_row, 0)
        if offset < first_row or offset > self.size:
            raise fail(types.ErrorCode.STALE, "the resume position is outside the file's rows; start again")
        self.rows = Rows(self.file, delimiter, offset)
        self.before = offset  # the file offset of the next item (the row after `rows_done`)
        self.partial = None  # an item being emitted in pieces: (its UTF-8 text, bytes already sent)
        self.finished = False
        if inside:
            item = self.next_item()
            if item is None or inside >= len(item) or not is_char_boundary(item, inside):
                raise fail(types.ErrorCode.STALE, "the resume position no longer falls inside its row; start again")
            self.partial = (item, inside)

    def next_item(self):
        """The next row as UTF-8 JSON text, or None at the end of the file."""
        record = self.rows.next()
        if record is None:
            return None
        row = {name: record[i] if i < len(record) else None for i, name in enumerate(self.header)}
        if self.all_columns:
            if len(record) > len(self.header):
                row["_extra"] = record[len(self.header):]
        else:
            row = {name: row[name] for name in self.columns}
        return json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    @guarded
    def next(self, limit):
        limit = max(limit.bytes, 4)  # the contract promises at least 4: room for any character
        if self.partial is None:
            item = self.next_item()
            if item is None:
                self.finished = True
                return None
            done = 0
        else:
            item, done = self.partial
            self.partial = None

        end = min(done + limit, len(item))
        while not is_char_boundary(item, end):
            end -= 1
        piece = item[done:end].decode("utf-8")

        if end < len(item):
            # More of this row to come: resume `end` bytes into the same row.
            self.partial = (item, end)
            resume = encode(self.rows_done, self.before, end)
            return types.Chunk(types.Payload_Item(piece), None, True, resume)

        # The row is complete: resume at the next row.
        self.rows_done += 1
        self.before = self.rows.offset
        if self.rows_done % PROGRESS_EVERY == 0:
            progress.report(self.before, self.size, f"{self.rows_done} rows, {self.before} of {self.size} bytes")
        return types.Chunk(types.Payload_Item(piece), None, False, encode(self.rows_done, self.before))

    @guarded
    def info(self):
        return json.dumps(
            {"path": self.path, "size": self.size, "columns": self.columns, "rows_so_far": self.rows_done},
            ensure_ascii=False,
        )

    @guarded
    def summary(self):
        return types.Summary(
            json.dumps({"rows": self.rows_done, "file_bytes": self.size}),
            self.finished,  # until the end, the count is only a lower bound
            ["Pass `columns` to narrow each row to the columns you need."],
        )

    @guarded
    def fingerprint(self):
        """Size, modification time and identity of the file, read afresh, so the
        host can refuse to resume over a file that changed between pages."""
        try:
            meta = os.stat(self.path)
        except OSError as err:
            raise os_error(f"`{self.given}`", err)
        try:
            hash = self.dir.metadata_hash_at(PathFlags.SYMLINK_FOLLOW, self.relative)
            identity = hash.lower ^ rotate_left(hash.upper, 1)  # as the Rust SDK combines it
        except Err:
            identity = 0  # unknown
        return types.Fingerprint(meta.st_size, meta.st_mtime_ns, identity)


class Tool(wit_world.exports.Tool):
    """The exported `tool` interface: what the tool is, and how a call starts."""

    def describe(self):
        return types.Manifest(
            name=NAME,
            version=VERSION,
            title="CSV rows as JSON",
            description=DESCRIPTION,
            input_schema=json.dumps(INPUT_SCHEMA),
            output_schema=json.dumps(OUTPUT_SCHEMA),
            access=types.Access.READ,
            read_only=True,
            destructive=False,
            idempotent=True,
        )

    @guarded
    def open(self, args, resume):
        try:
            parsed = json.loads(args)
        except ValueError:
            raise fail(types.ErrorCode.INVALID_ARGUMENT, "the arguments are not a JSON object")
        if not isinstance(parsed, dict):
            raise fail(types.ErrorCode.INVALID_ARGUMENT, "the arguments are not a JSON object")
        return ChunkStream(parsed, resume)
