"""The KV config store (namespace -> key -> value), pure; persistence lives in storage.py."""

from __future__ import annotations

import json
from typing import Any

from ..protocol.fastjson import dumps_plain, lenient_loads


class KVConfigError(ValueError):
    """The KV file's content is not a KV config table."""


class KVStore:
    def __init__(self, table: dict[str, dict[str, str]] | None = None) -> None:
        self.table: dict[str, dict[str, str]] = table if table is not None else {}
        self.generation = 0
        #: see watch()
        self._journals: list[set[tuple[str, str]]] = []

    def watch(self) -> set[tuple[str, str]]:
        """Start recording writes: the returned set gathers the (namespace, key) of every
        put or delete that changed a value from now on; the watcher empties it as it reads."""
        journal: set[tuple[str, str]] = set()
        self._journals.append(journal)
        return journal

    def unwatch(self, journal: set[tuple[str, str]]) -> None:
        self._journals = [j for j in self._journals if j is not journal]

    def put(self, namespace: str, key: str, value: str) -> None:
        self.table.setdefault(namespace, {})[key] = value
        self.generation += 1
        for journal in self._journals:
            journal.add((namespace, key))

    def get(self, namespace: str, key: str) -> str | None:
        ns = self.table.get(namespace)
        return None if ns is None else ns.get(key)

    def delete(self, namespace: str, key: str) -> None:
        """An emptied namespace is kept (empty), as the Java server does."""
        ns = self.table.get(namespace)
        if ns is not None and ns.pop(key, None) is not None:
            self.generation += 1
            for journal in self._journals:
                journal.add((namespace, key))

    def namespace(self, namespace: str) -> dict[str, str] | None:
        return self.table.get(namespace)

    def dumps(self) -> bytes:
        """The Java kvConfig.json format: ``{"configTable":{ns:{key:value}}}``."""
        return dumps_plain({"configTable": self.table}).encode("utf-8")

    @classmethod
    def loads(cls, data: bytes) -> KVStore:
        try:
            obj: Any = lenient_loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise KVConfigError(f"not JSON: {exc}") from None
        table = obj.get("configTable") if isinstance(obj, dict) else None
        if table is None and isinstance(obj, dict) and not obj:
            table = {}
        if not isinstance(table, dict):
            raise KVConfigError('expected an object with a "configTable" map')
        out: dict[str, dict[str, str]] = {}
        for ns, entries in table.items():
            if entries is None:
                entries = {}
            if not isinstance(entries, dict):
                raise KVConfigError(f"namespace {ns!r} is not a map")
            out[str(ns)] = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in entries.items() if v is not None}
        return cls(out)
