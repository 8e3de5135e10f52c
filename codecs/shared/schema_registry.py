"""Avro schemas by Confluent schema id: from a Schema Registry (Confluent's REST API, as Confluent, Karapace and
Apicurio's ``/apis/ccompat/v7`` serve it) or from a folder of archived schemas (``<id>.avsc``, what
``cdc-replay archive`` writes beside the topic's dump).

Where the schemas come from is a setting of the process (``configure``; by default the environment:
``CDC_REPLAY_SCHEMA_REGISTRY`` = registry URL, ``CDC_REPLAY_SCHEMAS`` = folder(s), ``CDC_REPLAY_SCHEMAS_OUT`` =
the folder an encoder writes new schemas to). Credentials never travel as
options: ``CDC_REPLAY_SCHEMA_REGISTRY_USER_INFO`` (``user:password``, Confluent's ``basic.auth.user.info``) or
the standard ``SCHEMA_REGISTRY_USER_INFO``, read where the requests are made. Each schema id is fetched once per
process and cached, so a decode task asks the registry once per schema, never per message.

Writing (``register``): with a registry, the schema is registered under its subject (``<topic>-value`` /
``<topic>-key``) and the registry's id is used; otherwise the id is derived from the schema's canonical form
(stable across processes) and, with a folder to write to, the schema is written there as ``<id>.avsc``. Without either, the
schema lives in this process only (enough to decode what the same process encoded)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Optional

ENV_URL = "CDC_REPLAY_SCHEMA_REGISTRY"
ENV_FOLDER = "CDC_REPLAY_SCHEMAS"  # one folder, or several separated by os.pathsep
ENV_FOLDER_OUT = "CDC_REPLAY_SCHEMAS_OUT"  # where an encoder writes the schemas it made, without a registry
ENV_USER_INFO = ("CDC_REPLAY_SCHEMA_REGISTRY_USER_INFO", "SCHEMA_REGISTRY_USER_INFO")
# Every variable the store reads: the jobs hand these to each executor process that decodes or encodes.
ENVIRONMENT = (ENV_URL, ENV_FOLDER, ENV_FOLDER_OUT, *ENV_USER_INFO)
TIMEOUT_S = 30


class SchemaNotFound(LookupError):
    pass


class SchemaStore:
    def __init__(self, url: Optional[str] = None, folder: Optional[str] = None, out: Optional[str] = None):
        self.url = url.rstrip("/") if url else None
        self.folders = [Path(f) for f in (folder or "").split(os.pathsep) if f]
        self.out = Path(out) if out else (self.folders[0] if self.folders else None)
        self._by_id: dict[int, dict] = {}
        self._ids: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self.fetches = 0  # registry/folder reads, so tests can check the once-per-id cache

    def describe(self) -> str:
        return " and ".join(filter(None, [f"registry {self.url}" if self.url else "",
                                          f"folder {os.pathsep.join(map(str, self.folders))}" if self.folders
                                          else ""])) or "no schema source"

    def get(self, schema_id: int) -> dict:
        """The schema (parsed JSON) with this id; SchemaNotFound when no configured source has it."""
        cached = self._by_id.get(schema_id)
        if cached is not None:
            return cached
        with self._lock:
            if schema_id not in self._by_id:
                self._by_id[schema_id] = self._fetch(schema_id)
            return self._by_id[schema_id]

    def _fetch(self, schema_id: int) -> dict:
        self.fetches += 1
        for folder in self.folders:
            path = folder / f"{schema_id}.avsc"
            if path.is_file():
                return json.loads(path.read_text(encoding="utf-8"))
        if self.url:
            try:
                body = self._request("GET", f"/schemas/ids/{schema_id}")
            except urllib.error.HTTPError as exc:
                if exc.code == 404:
                    raise SchemaNotFound(f"schema id {schema_id} is not in {self.describe()}") from None
                raise
            if body.get("schemaType", "AVRO") != "AVRO":
                raise SchemaNotFound(f"schema id {schema_id} is {body['schemaType']}, not AVRO")
            return json.loads(body["schema"])
        raise SchemaNotFound(f"schema id {schema_id} is not in {self.describe()}")

    def register(self, subject: str, schema: dict) -> int:
        """The id of ``schema`` under ``subject`` (registered when there is a registry); cached per process."""
        text = canonical(schema)
        known = self._ids.get((subject, text))
        if known is not None:
            return known
        with self._lock:
            if self.url:
                reply = self._request("POST", f"/subjects/{urllib.parse.quote(subject, safe='')}/versions",
                                      {"schema": text})
                schema_id = int(reply["id"])
            else:
                schema_id = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") & 0x7FFFFFFF
                if self.out is not None:
                    write_schema(self.out, schema_id, schema)
            self._by_id[schema_id] = schema
            self._ids[(subject, text)] = schema_id
            return schema_id

    def _request(self, method: str, path: str, body: Any = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Accept", "application/vnd.schemaregistry.v1+json, application/json")
        if data is not None:
            request.add_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        user_info = next((os.environ[k] for k in ENV_USER_INFO if os.environ.get(k)), None)
        if user_info:
            request.add_header("Authorization", "Basic " + base64.b64encode(user_info.encode()).decode())
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as reply:
            return json.loads(reply.read())


def canonical(schema: dict) -> str:
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


def write_schema(folder: Path, schema_id: int, schema: dict) -> None:
    """``<folder>/<id>.avsc``, written atomically (a reader never sees half a schema); same id, same content."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{schema_id}.avsc"
    tmp = folder / f".{schema_id}.avsc.{os.getpid()}.{threading.get_ident()}"
    tmp.write_text(canonical(schema), encoding="utf-8")
    os.replace(tmp, target)


_store: Optional[SchemaStore] = None
_settings: Optional[tuple] = None
_override: Optional[tuple] = None


def configure(url: Optional[str] = None, folder: Optional[str] = None, out: Optional[str] = None) -> None:
    """Set where this process reads (and registers) schemas, over the environment; ``configure()`` goes back to
    the environment."""
    global _override
    _override = (url, folder, out) if (url or folder or out) else None


def settings() -> tuple[Optional[str], Optional[str], Optional[str]]:
    """(registry URL, folders to read, folder to write) in force: ``configure``'s, else the environment's."""
    if _override is not None:
        return _override
    return (os.environ.get(ENV_URL) or None, os.environ.get(ENV_FOLDER) or None,
            os.environ.get(ENV_FOLDER_OUT) or None)


def store() -> SchemaStore:
    """The process's store; a new one (empty cache) only when the settings changed."""
    global _store, _settings
    now = settings()
    if _store is None or now != _settings:
        _store, _settings = SchemaStore(*now), now
    return _store
