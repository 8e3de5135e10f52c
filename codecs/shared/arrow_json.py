"""JSON text built from whole Arrow arrays, byte for byte what ``orjson.dumps`` writes for the same values.

An encoder that writes one message per event can assemble its messages column-wise: every string quoted and
escaped in one kernel pass per rule, an image's ``"key":value`` pairs joined per row, the pieces of a message
concatenated element-wise. That is Arrow's C++ doing per value what ``orjson.dumps`` of a dict per event does in
Python (the dicts, not the serialisation, were most of the cost): oms-default's re-encode of the bench's canal-json
events went from 17.6 to 7.3 us an event on one core, routing keys and Arrow assembly included.

What ``orjson`` does and these helpers mirror: ``"`` and ``\\`` escaped with a backslash; the control characters
U+0000-U+001F as ``\\b \\t \\n \\f \\r`` or ``\\u00xx`` (lower-case hex); everything else (non-ASCII, U+007F,
U+2028) as its UTF-8 bytes; ``None`` as ``null``. Arrow's strings are valid UTF-8, so the lone surrogates orjson
refuses cannot occur here.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from .value_text import JSON_NUMBER_TEXT

# The control characters as orjson escapes them (``\\n``, ``\\u001f``, ...): asked of orjson itself.
CONTROL_ESCAPES = [(chr(c), orjson.dumps(chr(c)).decode()[1:-1]) for c in range(0x20)]
_CONTROL = "[\\x00-\\x1f]"
_NEEDS_ESCAPE = '["\\\\\\x00-\\x1f]'  # a quote, a backslash or a control character
# The same as bytes. In UTF-8 none of them occurs inside a multi-byte character, so a scan of an array's bytes
# finds exactly the strings that ``_NEEDS_ESCAPE`` matches.
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_OFFSET_TYPES = {pa.string(): np.int32, pa.binary(): np.int32, pa.large_string(): np.int64,
                 pa.large_binary(): np.int64}
# ``value_text.is_json_number`` in RE2 (``$``: the end of the text).
JSON_NUMBER = f"^{JSON_NUMBER_TEXT}$"


def concat(*pieces: pa.Array | str) -> pa.Array:
    """Element-wise concatenation; a ``str`` piece is the same text in every row. NULL if any piece is NULL."""
    return pc.binary_join_element_wise(*pieces, "")


def escaped(values: pa.Array) -> pa.Array:
    """The text of each string as it stands between the quotes of a JSON string (NULL stays NULL). One scan of the
    array's bytes finds the strings that need an escape (few, in real data; 20 times faster than RE2 over each
    string); only those take the replacements, and of the control characters only those that occur."""
    found = _escape_bytes(values)
    if found is None:
        return values
    needs, controls = found
    some = pc.replace_substring(pc.replace_substring(pc.filter(values, needs), "\\", "\\\\"), '"', '\\"')
    if controls:
        control = pc.match_substring_regex(some, _CONTROL)
        fixed = pc.filter(some, control)
        for c in controls:
            char, escape = CONTROL_ESCAPES[c]
            fixed = pc.replace_substring(fixed, char, escape)
        some = pc.replace_with_mask(some, control, fixed)
    return pc.replace_with_mask(values, needs, some)


def _escape_bytes(values: pa.Array) -> tuple[pa.Array, list[int]] | None:
    """(which strings hold a byte that needs an escape, which control characters occur), or None for none."""
    if not len(values) or values.null_count == len(values):
        return None
    offset_type = _OFFSET_TYPES.get(values.type)
    if offset_type is None:  # another layout (string views): RE2 over each string
        needs = pc.fill_null(pc.match_substring_regex(values, _NEEDS_ESCAPE), False)
        return (needs, list(range(0x20))) if pc.any(needs).as_py() else None
    _, offset_buffer, data_buffer = values.buffers()
    offsets = np.frombuffer(offset_buffer, offset_type)[values.offset:values.offset + len(values) + 1]
    if data_buffer is None or offsets[0] == offsets[-1]:
        return None
    data = np.frombuffer(data_buffer, np.uint8)[offsets[0]:offsets[-1]]
    at = np.flatnonzero((data < 0x20) | (data == _QUOTE) | (data == _BACKSLASH))
    if not at.size:
        return None
    # the string each byte belongs to: the last whose start is at or before it (empty strings start there too).
    # A NULL whose slot holds such bytes is marked as well, and stays NULL through the replacements.
    rows = np.searchsorted(offsets, at + offsets[0], side="right") - 1
    needs = np.zeros(len(values), dtype=bool)
    needs[rows] = True
    controls = [int(b) for b in np.unique(data[at]) if b < 0x20]
    return pa.array(needs), controls


def strings(values: pa.Array) -> pa.Array:
    """Each value as a JSON string literal, NULL as ``null``."""
    return pc.fill_null(concat('"', escaped(values), '"'), "null")


def is_number(values: pa.Array) -> pa.Array:
    """True where the text may be written as a bare JSON number (``value_text.is_json_number``); NULL -> False."""
    return pc.fill_null(pc.match_substring_regex(values, JSON_NUMBER), False)


def objects(maps: pa.ListArray, bare: pa.Array, names: "Names", extra: pa.Array | None = None) -> pa.Array:
    """Each map (``as_lists`` of a ``map<string,string>``) as a JSON object in its entry order, NULL as ``null``.
    ``bare``: one flag per entry of ``maps.flatten()``, true where the value is written as it stands (a bare number
    the caller has checked with ``is_number``), else as a JSON string. ``names``: the batch's column names
    (``Names``), whose JSON text is worked out once per name. ``extra``: per row, members (``"k":v,...`` text)
    written after the map's own, or NULL for none."""
    values = maps.flatten().field("value")
    literal = pc.if_else(bare, values, strings(values))
    pairs = concat(names.keys_json(maps), ":", literal)
    lengths = pc.fill_null(pc.list_value_length(maps), 0)
    joined = join_lists(pairs, lengths)
    if extra is not None and extra.null_count < len(extra):
        comma = pc.if_else(pc.greater(lengths, 0), ",", "")
        joined = pc.if_else(extra.is_null(), joined, concat(joined, comma, pc.fill_null(extra, "")))
    return pc.if_else(maps.is_null(), "null", concat("{", joined, "}"))


def join_lists(texts: pa.Array, lengths: pa.Array) -> pa.Array:
    """``texts`` cut into consecutive runs of ``lengths`` (one per row) and each run joined with ","."""
    offsets = pa.concat_arrays([pa.array([0], pa.int32()), pc.cumulative_sum(lengths).cast(pa.int32())])
    return pc.binary_join(pa.ListArray.from_arrays(offsets, texts), ",")


def as_lists(maps: pa.Array) -> pa.ListArray:
    """A ``map<string,string>`` array as ``list<struct<key,value>>``, which Arrow's list kernels take (its map
    kernels stop at ``map_lookup``; ``list_parent_indices`` of a sliced map aborted the process in pyarrow 26)."""
    offsets = maps.offsets  # absolute into ``values``, which ignores the slice
    start = offsets[0].as_py()
    return pa.ListArray.from_arrays(pc.subtract(offsets, start), maps.values.slice(start), mask=maps.is_null())


def entry_rows(lists: pa.Array) -> pa.Array:
    """The row of each entry of ``lists.flatten()``, as int64. (``pc.list_parent_indices`` also counts the
    entries a NULL row is backed by, which ``flatten`` skips.)"""
    sizes = pc.fill_null(pc.list_value_length(lists), 0).to_numpy()
    return pa.array(np.repeat(np.arange(len(lists), dtype=np.int64), sizes))


class Names:
    """The distinct column names of a batch (its declarations' and its images'), each numbered once, so that
    matching an image entry to its row's declaration compares integers, and a name's JSON text is built once."""

    def __init__(self, *name_arrays: pa.Array) -> None:
        self.unique = pc.unique(pa.concat_arrays([a.cast(pa.string()) for a in name_arrays]))
        self._json: pa.Array | None = None

    def index(self, names: pa.Array) -> np.ndarray:
        """Each name's number (int64; -1 for NULL)."""
        return pc.fill_null(pc.index_in(names, value_set=self.unique), -1).to_numpy().astype(np.int64)

    def at(self, rows: pa.Array, names: pa.Array) -> np.ndarray:
        """One integer per (row, name) pair: equal exactly where both are."""
        return rows.to_numpy() * (len(self.unique) + 1) + self.index(names) + 1

    def keys_json(self, maps: pa.ListArray) -> pa.Array:
        """The JSON string of each entry's key of ``maps.flatten()``."""
        return self.json(maps.flatten().field("key"))

    def json(self, names: pa.Array) -> pa.Array:
        """The JSON string of each name (all of them among the batch's)."""
        if self._json is None:
            self._json = strings(self.unique)
        return self._json.take(pa.array(self.index(names)))


def _per_declaration(decl: pa.StructArray, value: Callable[[str | None, int | None, bool], object]) -> list:
    """``value(type_name, jdbc_type, number)`` of each declaration (an entry of a ``list<COLUMN>``'s flatten),
    called once per distinct (type_name, jdbc_type, number): a batch repeats a handful of declarations."""
    types, jdbc = decl.field("type_name"), decl.field("jdbc_type")
    type_ids = pc.fill_null(pc.index_in(types, value_set=pc.unique(types)), -1).to_numpy().astype(np.int64)
    jdbc_ids = np.where(jdbc.is_null().to_numpy(zero_copy_only=False), 1 << 32,
                        pc.fill_null(jdbc, 0).to_numpy().astype(np.int64) + (1 << 31))
    number = pc.fill_null(decl.field("number"), False).to_numpy(zero_copy_only=False).astype(np.int64)
    _, first, kind_of = np.unique(((type_ids + 1) << 34 | jdbc_ids) << 1 | number, return_index=True,
                                  return_inverse=True)
    chosen = pa.array(first)
    values = [value(t, j, bool(n)) for t, j, n in zip(types.take(chosen).to_pylist(), jdbc.take(chosen).to_pylist(),
                                                       decl.field("number").take(chosen).to_pylist())]
    return [values[k] for k in kind_of.reshape(-1)]


def declared_flags(maps: pa.ListArray, columns: pa.Array, names: Names,
                   flag: Callable[[str | None, int | None, bool], bool]) -> pa.Array:
    """A flag per entry of ``maps.flatten()`` (``as_lists``): ``flag(type_name, jdbc_type, number)`` of the first
    column of its row's ``columns`` (``list<COLUMN>``) with the entry's name; False where the row declares none.
    ``flag`` runs once per distinct declaration, not per entry."""
    decl = columns.flatten()
    image_names = maps.flatten().field("key")
    if not len(decl) or not len(image_names):
        return pa.array(np.zeros(len(image_names), dtype=bool))
    decl_flags = pa.array(_per_declaration(decl, flag), pa.bool_())
    # (row, name) of each declaration and each entry: index_in finds an entry's first declaration.
    decl_at = names.at(entry_rows(columns), decl.field("name"))
    entry_at = names.at(entry_rows(maps), image_names)
    found = pc.index_in(pa.array(entry_at), value_set=pa.array(decl_at))
    return pc.fill_null(decl_flags.take(found), False)


def declaration_texts(columns: pa.Array, text: Callable[[str | None, int | None], str | None]
                      ) -> tuple[pa.Array, pa.Array]:
    """For each entry of ``columns.flatten()`` (``list<COLUMN>``): ``text(type_name, jdbc_type)``, run once per
    distinct declaration; and the row of each entry (``entry_rows``)."""
    decl = columns.flatten()
    if not len(decl):
        return pa.array([], pa.string()), entry_rows(columns)
    return pa.array(_per_declaration(decl, lambda t, j, _: text(t, j)), pa.string()), entry_rows(columns)


def lookup(maps: pa.Array, key: str) -> pa.Array:
    """``map[key]`` per row, the first entry of that name; NULL for a NULL map or a missing key."""
    return pc.map_lookup(maps, pa.scalar(key, pa.string()), "first")


class KeyGroups:
    """The rows of a batch grouped by their key declaration (``primary_key``; a table repeats its own), so that
    per-row key texts are built once per group and key column, from whole columns. The key's names must not be
    NULL (``has_null_name``)."""

    def __init__(self, primary_key: pa.Array) -> None:
        n = len(primary_key)
        self.n = n
        sizes = pc.fill_null(pc.list_value_length(primary_key), 0).to_numpy().astype(np.int64)
        flat = primary_key.flatten()
        codes = pc.index_in(flat, value_set=pc.unique(flat)).to_numpy().astype(np.int64)
        # One row of (size, name numbers..., -1 padding) per event: equal rows are equal declarations.
        table = np.full((n, int(sizes.max(initial=0)) + 1), -1, dtype=np.int64)
        table[:, 0] = sizes
        starts = np.cumsum(sizes) - sizes
        table[np.repeat(np.arange(n), sizes), np.arange(len(codes)) - np.repeat(starts, sizes) + 1] = codes
        _, first, group_of = np.unique(table, axis=0, return_index=True, return_inverse=True)
        group_of = group_of.reshape(-1)
        self.groups: list[tuple[pa.Array | None, list[str]]] = []
        self.order: pa.Array | None = None
        if len(first) == 0:
            return
        if len(first) == 1:
            self.groups.append((None, primary_key[int(first[0])].as_py() or []))
        else:  # rows by group in one sort (a batch of a many-table archive holds hundreds of groups)
            by_group = np.argsort(group_of, kind="stable")
            at = np.split(by_group, np.cumsum(np.bincount(group_of, minlength=len(first)))[:-1])
            self.groups = [(pa.array(rows), primary_key[int(f)].as_py() or []) for rows, f in zip(at, first)]
            self.order = pa.array(np.argsort(by_group, kind="stable"))

    def join(self, value: Callable[[str, pa.Array | None], pa.Array]) -> pa.Array:
        """Per row, ``"\\x01".join(text of k for k in that row's primary_key)``; "" for a NULL or empty key.
        ``value(k, rows)``: the text of column ``k`` in the batch's rows ``rows`` (int64 indices; None: every
        row), never NULL. Each group asks for its own rows only, so the work grows with the batch, not with the
        number of groups times the batch."""
        texts = []
        for rows, names in self.groups:
            if not names:
                texts.append(pa.array([""] * (self.n if rows is None else len(rows)), pa.string()))
                continue
            parts = [value(k, rows) for k in names]
            texts.append(pc.binary_join_element_wise(*parts, "\x01") if len(parts) > 1 else parts[0])
        if not texts:
            return pa.array([], pa.string())
        return texts[0] if self.order is None else pa.concat_arrays(texts).take(self.order)


def rows_of(array: pa.Array, rows: pa.Array | None) -> pa.Array:
    """``array`` at ``rows`` (None: all of it)."""
    return array if rows is None else array.take(rows)


class Lookups:
    """``maps[k]`` (``lookup``) for all rows or a ``KeyGroups`` group's rows, each worked out once."""

    def __init__(self, maps: pa.Array) -> None:
        self.maps = maps
        self._found: dict[tuple[int, str], pa.Array] = {}
        self._subsets: dict[int, tuple[pa.Array, pa.Array]] = {}  # id(rows) -> (rows, maps at rows)

    def get(self, key: str, rows: pa.Array | None) -> pa.Array:
        at = -1 if rows is None else id(rows)
        hit = self._found.get((at, key))
        if hit is None:
            if rows is None:
                maps = self.maps
            else:
                subset = self._subsets.get(at)
                if subset is None or subset[0] is not rows:  # held, so the id is not reused while cached
                    subset = self._subsets[at] = (rows, self.maps.take(rows))
                maps = subset[1]
            hit = self._found[(at, key)] = lookup(maps, key)
        return hit


class BatchKeys:
    """A batch's key groups (``KeyGroups``) and its images' lookups (``Lookups``), built once and shared by every
    reader of its key values: a codec's message keys and the re-encode's routing keys ask for the same columns of
    the same rows."""

    def __init__(self, primary_key: pa.Array, before: pa.Array, after: pa.Array) -> None:
        self.groups = KeyGroups(primary_key)
        self.before, self.after = Lookups(before), Lookups(after)


def has_null_name(primary_key: pa.Array) -> bool:
    """True when some row's key declaration holds a NULL name (``KeyGroups`` does not take those)."""
    return primary_key.flatten().null_count > 0
