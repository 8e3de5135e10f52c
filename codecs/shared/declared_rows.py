"""A codec's declaration for the one JVM decode of JSON row messages (``shared/jvm/DeclaredJson.java``): where a
message's roles are read and what the encoder writes at each key it compares. The JVM decodes the messages of one
row it can account for to exactly the rows the codec's ``decode`` gives, vendor fixes included
(``tests/codecs/test_jvm_fast_paths.py``), and declines the rest, which the codec decodes. A format adds a
declaration, not a decoder: the rules of each role and rendering are written once, in Java.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional

import orjson

from .required import Need

# How a role's value may be written: "text" (a string), "digits" (a string of ASCII digits), "scalar" (a string
# or a bare number), "number", "integer" (a bare number of digits), "object" (a JSON object), "list". Another
# kind declines the message.
READ_KINDS = frozenset({"text", "digits", "scalar", "number", "integer", "object", "list"})
# What the encoder writes at a key (DeclaredJson.written): from the canonical fields the message was read to; or
# "=" and a JSON constant ("=0", '="ROWDATA"', "=[]").
# "record_millis": a Kafka record's timestamp where it has one, else the event time (epoch millis), else null.
RENDERINGS = frozenset({"null", "op", "database", "table", "qualified_table", "seconds_number", "seconds_text",
                        "seconds_text_or_null", "millis_number", "millis_number_or_null", "object_if_time",
                        "stamp_micros", "stamp_seconds", "sequence_number", "sequence_text", "sequence_digits20",
                        "sequence_first_text", "sequence_second_number", "column_specs",
                        "transaction_text", "transaction_number", "key_list", "key_list_or_empty", "key_text",
                        "key_values", "row_id", "type_names", "type_codes",
                        "database_or_empty", "key_list_or_null", "record_millis", "schema", "schema_if_any",
                        "transaction_object", "sequence_second_of_three", "before_document", "after_document",
                        "update_description", "shell_value", "shell_where", "record_type"})


@dataclass(frozen=True)
class ImageTypes:
    """Column types written inside each image: at ``key``, ``{column: {member: type name, ...}}``. A column's type
    is the first image's (in ``images`` order) that types it; its place follows the cells of the first image that
    names it. An image whose types object is missing or differs from the one its columns give keeps that
    object's JSON text (null: missing) at ``vendor[<vendor>][<image key>]``, image keys in ``order``."""

    key: str
    member: str
    vendor: str
    order: tuple[str, ...]


@dataclass(frozen=True)
class Envelope:
    """A message may wrap the row message at ``key`` beside a schema at ``schema`` (Kafka Connect's JsonConverter):
    it does where it has ``key`` and none of ``bare_keys``. How it was written ("schema", "payload" without a schema,
    "bare") is kept at ``vendor[<vendor>]``, the schema's JSON text at ``vendor[<schema>]``; keys beside the two
    decline. The declaration's other key paths are inside the row message."""

    key: str
    schema: str
    vendor: str
    bare_keys: tuple[str, ...]


@dataclass(frozen=True)
class ConnectSchema:
    """The envelope's schema is a Kafka Connect struct whose ``images`` fields' fields declare the images' columns
    (the JVM's ``ConnectSchema``): a column's type name is its ``source_type`` parameter, else the schema name, else
    the type (``decimal``: decimal(precision,scale) from its parameters where the name is the logical one); its
    JDBC type by logical name (``logical_kinds`` -> ``logical_jdbc``), else by Connect type (``connect_jdbc``); its
    cells read as the logical kind says, else as ``plain_kinds`` of its type (else "str"); ``instants``: a column of
    the first kind whose source type is of the second family is read as the third."""

    images: tuple[str, ...]
    source_type: str
    logical_kinds: Mapping[str, str]
    logical_jdbc: Mapping[str, int]
    connect_jdbc: Mapping[str, int]
    plain_kinds: Mapping[str, str]
    decimal: str
    precision: str
    instants: tuple[str, str, str]  # (zoned kind, source type family, kind): a zoned column read as epoch seconds


@dataclass(frozen=True)
class PositionRule:
    """How one kind of connector's position is read (the JVM's ``DeclaredJson.position``): ``how`` is "binlog"
    (keys: file, offset, row), "lsn" (a text of the pair [last commit, lsn], lsn), "hex_lsns" (commit, change and
    serial number), "scn" (change, commit) or "oplog" (time, increment), or another word, which declines; for the
    connectors named ``connectors``, or a nameless one that has all the keys of one of ``nameless``."""

    how: str
    connectors: tuple[str, ...]
    nameless: tuple[tuple[str, ...], ...]
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Positions:
    """A sequence from the position the object at ``at`` holds, by the first of ``rules`` for the connector it names
    at ``connector`` (lower-cased; none: by the keys it has), then the integer at ``then``; none for another
    connector."""

    at: str
    connector: str
    then: str
    rules: tuple[PositionRule, ...]


@dataclass(frozen=True)
class Documents:
    """The images ("before", "after") are MongoDB Extended JSON document strings (the JVM's ``ExtendedJson``): each
    top-level field canonical text typed by its BSON type (``shared/bson_values``), the strings kept at
    ``vendor[<vendor>]`` and written back as they are ("before_document", "after_document"). An UPDATE without an
    after document describes its changes in the object at ``changes``: the updated fields as a document string at
    ``updated`` (the after is the key and these), removed field names at ``removed``, truncated arrays at
    ``truncated`` ("update_description" writes it back). The document key is the field ``id_field``; the Kafka
    record key holds it as Extended JSON text at ``key_member`` (a relational row's key: a document of its key
    columns)."""

    vendor: str
    changes: str
    updated: str
    removed: str
    truncated: str
    id_field: str
    key_member: str


@dataclass(frozen=True)
class ShellDocuments:
    """The images are MongoDB shell-JSON document strings as Huawei DRS writes an oplog entry (the JVM's
    ``ShellJson``; ``drs_mongo``): each top-level field canonical text typed by its BSON type. The document is at
    ``value`` (an insert's; a delete's key; an update's ``{"$set": {...}, "$unset": {...}}``, either or both, the
    unset fields null in the after, removed_columns and ``vendor["unset"]``; with record type "replace" its whole
    new document), an update's document key at ``where``; the record type at ``record_type`` ("insert" for an
    insert, "update" or "replace" for an update) is kept at ``vendor[<record_type>]``. The key is the field
    ``id_field`` where the keyed document has it, else the key document's fields. Only documents the encoder
    writes back as they are written are taken ("shell_value", "shell_where" and "record_type" write them)."""

    value: str
    where: str
    record_type: str
    id_field: str


@dataclass(frozen=True)
class DeclaredRows:
    """Where a codec's messages keep each role, and what its encoder writes at each key it compares.

    What a message holds:
    - ``op``: (key path, {vendor value: canonical op}); the encoder writes an op as its first vendor value.
    - ``images``: (role, key path) in the order their columns are declared: "row" and "changed" (the after, or a
      DELETE's before; an UPDATE's changed columns over it), "row" and "update_before" (an UPDATE's changed columns
      and its whole before), "before" and "after", or lists of rows: "rows" (the afters) and "row_befores" (an
      UPDATE's whole befores, one per row) or "row_changes" (an UPDATE's changed columns, one object per row, their
      old values over the row, their names kept as vendor ``old_keys``; never compared, as Canal's are not). A
      DELETE's rows are in ``delete_main`` ("row_befores" or "rows") or the other list, which ``delete_in_vendor``
      then names in the vendor data; with ``delete_hides_other`` the other list then goes uncompared (DRS).
    - ``op_in_vendor``: the vendor key that keeps the op as the message writes it (Canal's type: INIT, INSERT).
    - ``reads``: role -> (key path, kind: ``READ_KINDS``; "a|b": the first path the message has, not null) for
      database, schema (a schema level other than the database declines, unless ``schema_level``), table, tenant
      (the type that says the database names a tenant, one of ``tenant_types``), primary_key (a list, or one text
      joined by ``key_separator``), seconds, millis (epoch), stamp (a UTC "YYYY-MM-DD HH:MM:SS.f" event time),
      stamp_seconds ("YYYY-MM-DDTHH:MM:SS"), sequence (and sequence_next, its second component; ``sequence_none`` is
      the text that says there is none),
      transaction_id, type_names and type_codes (objects of column -> type name / java.sql.Types number: the
      declared columns, before the rows' others), column_specs (a list of {"name", "type"}).
    - ``image_types``: column types inside each image (``ImageTypes``).
    - ``qualified_table``: the table role names the database too, "one_dot" (DATABASE.TABLE, a third level
      declines) or "first_dot" (split at the first dot). ``schema_level``: the schema is a level of its own (the
      event's schema; the qualified table is database.schema.table), read as names are. ``names_stripped``: names
      are read stripped of blanks (one with blanks around declines), an empty database or schema as none.
      ``database_required``: a message without a database name is the codec's to name (the table always is).
    - ``null_cells_declare``: a column whose cells are all null is declared. ``types_complete``: every column has
      a type name and a code (the codec would derive the others). ``columns_exact``: the images hold exactly the
      columns column_specs declares, the key's among them (the codec warns otherwise). ``key_declared``: the key's
      columns are among the declared ones (the same warning).
    - ``decline_families``: a column of one of these type families (``types.family`` of its name, else of its
      code) declines; ``value_conversions``: family -> how its cells' text becomes canonical ("java_bytes":
      ``Arrays.toString(byte[])`` as base64; "local_seconds" and an offset: wall-clock text as epoch seconds;
      Alibaba Canal's ISO-8859-1 text of raw bytes: "latin1_base64", "latin1_unsigned" (BIT), "latin1_wkb"
      (family "geometry": MySQL's SRID, kept as vendor ``srid`` where not 0, and WKB); PostgreSQL's text (DRS
      GaussDB): "pg_hex" (bytea), "pg_bit" (a bit string as its value), "pg_zoned" (a timestamptz offset)), only
      the spelling the codec writes back taken; ``conversions_when``: only in messages that have this key
      (Alibaba's batch id); ``convert_numbers``: a bare number's literal is converted too (Canal reads every cell
      as text). ``family_by_name_then_code``: a type name no family matches falls back to the code (``types.family(name,
      code)``), instead of the name deciding wherever there is one.
    - ``jdbc_by_name``: the columns' JDBC types come from their type names, not from the message's codes (which
      are the vendor's own, DRS GaussDB's): the name's base (parenthesized parts and repeated blanks removed,
      lower case) looked up, else the first of ``jdbc_name_rules`` ("suffix"/"prefix", text, JDBC number) it
      matches, else none. ``codes_by_name``: the codes the encoder writes, by the base of a type name, else the
      column's JDBC type, else VARCHAR (12).
    - ``sequence_from_seconds``: a change without a sequence is ordered by its seconds.
    - ``requires``: key path -> the JSON values it may have besides null or none; ``declines``: keys whose
      presence declines.
    - ``envelope``: the row message inside an envelope (``Envelope``), ``connect_schema``: whose schema declares
      the columns (``ConnectSchema``); ``positions``: the sequence of a connector's position (``Positions``);
      ``record_key_names``: the primary key is the names of the Kafka record's key (an object, bare or in the
      envelope; another key, or one naming a column the keyed image lacks, declines);
      ``needs_under``: the codec's required fields are paths under this key (the envelope's), read inside it;
      ``documents``: the images are MongoDB documents (``Documents``); ``shell_documents``: MongoDB shell-JSON
      documents (``ShellDocuments``).

    What the encoder writes, for the vendor fixes (``json_fix.derive_fix``):
    - ``writes``: key path -> rendering (``RENDERINGS``, or "=" and a JSON constant), in the encoder's order;
      every other key of a message is kept as a fix, ``nested`` objects key by key, or with ``leaf_paths`` down to
      the first non-object on either side ("object_if_time": an object only where the event has a time).
    - ``compare_unwritten_images``: an image key the encoder does not write for the op (an insert's before) is
      compared like any other key. ``fix_keys``: a fix names its top-level key, not a path (DRS)."""

    op: tuple[str, Mapping[str, str]]
    images: tuple[tuple[str, str], ...]
    reads: Mapping[str, tuple[str, str]]
    writes: Mapping[str, str]
    nested: tuple[str, ...] = ()
    key_separator: Optional[str] = None
    tenant_types: tuple[str, ...] = ()
    null_cells_declare: bool = False
    sequence_from_seconds: bool = False
    database_required: bool = False
    qualified_table: Optional[str] = None
    compare_unwritten_images: bool = False
    image_types: Optional[ImageTypes] = None
    requires: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    delete_in_vendor: Optional[str] = None
    delete_main: str = "row_befores"
    delete_hides_other: bool = False
    names_stripped: bool = False
    types_complete: bool = False
    decline_families: tuple[str, ...] = ()
    value_conversions: Mapping[str, str] = field(default_factory=dict)
    fix_keys: bool = False
    leaf_paths: bool = False
    sequence_none: Optional[str] = None
    columns_exact: bool = False
    key_declared: bool = False
    op_in_vendor: Optional[str] = None
    conversions_when: Optional[str] = None
    convert_numbers: bool = False
    family_by_name_then_code: bool = False
    declines: tuple[str, ...] = field(default=())
    schema_level: bool = False
    jdbc_by_name: Mapping[str, int] = field(default_factory=dict)
    jdbc_name_rules: tuple[tuple[str, str, int], ...] = ()
    codes_by_name: Mapping[str, int] = field(default_factory=dict)
    envelope: Optional[Envelope] = None
    connect_schema: Optional[ConnectSchema] = None
    positions: Optional[Positions] = None
    record_key_names: bool = False
    needs_under: Optional[str] = None
    documents: Optional[Documents] = None
    shell_documents: Optional[ShellDocuments] = None

    def __post_init__(self) -> None:
        assert all(kind in READ_KINDS for _, kind in self.reads.values()), self.reads
        if "primary_key" in self.reads:  # a list of names, or one text of them joined by key_separator
            assert self.reads["primary_key"][1] == ("text" if self.key_separator else "list"), self.reads
        assert all(r in RENDERINGS or r.startswith("=") for r in self.writes.values()), self.writes

    def text(self, needs: Mapping[str, tuple[Need, ...]] = MappingProxyType({})) -> str:
        """The declaration as the JVM reads it (a JSON object; ``jvm_declaration_text`` hands it to the decode step),
        with the codec's required fields (``Required.needs``) of each message kind its op values name: a message that
        misses one is the codec's to name."""
        def inside(path: str) -> str:
            if self.needs_under is None:
                return path
            assert path.startswith(self.needs_under + "."), path
            return path[len(self.needs_under) + 1:]

        needed = {kind: [[inside(n.path), list(n.types), n.nonempty] for n in needs[kind]] for kind in self.op[1]
                  if kind in needs}
        return orjson.dumps({"needs": needed, **asdict(self)}).decode()
