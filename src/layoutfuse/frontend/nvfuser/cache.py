"""FusionCache: finished definitions, keyed by their printed records.

Two definitions that print the same records build the same fusion, so they
share one entry: the same ``fd.id()``, the same IR and the same executor (whose
compiled kernels are then reused). Safe to use from several threads: the singleton, the
lookup-or-insert of ``finalize`` and an entry's first executor are each made under a lock, so
threads that finish the same definition at once get one entry and one executor.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ...errors import DefinitionError, UnsupportedError
from ...ir import Fusion
from ...runtime.executor import FusionExecutor

if TYPE_CHECKING:
    from .recording import Recorder


class CacheEntry:
    """One distinct fusion: its id, printed records, IR, and the executor that runs it."""

    def __init__(self, fusion_id: int, recorder: Recorder):
        self.id = fusion_id
        self.lines: tuple[str, ...] = tuple(recorder.lines)
        self.fusion: Fusion = recorder.fusion
        self.input_states: tuple[int, ...] = tuple(recorder.input_states)
        self.output_states: tuple[int, ...] = tuple(recorder.output_states)
        self._executor: FusionExecutor | None = None
        self._lock = threading.Lock()

    def executor(self) -> FusionExecutor:
        """The entry's one executor, created at the first execution and reused after."""
        with self._lock:
            if self._executor is None:
                self._executor = FusionExecutor(self.fusion)
            return self._executor

    @property
    def has_executor(self) -> bool:
        return self._executor is not None


class FusionCache:
    """The process-wide cache of definitions (nvFuser's ``FusionCache``)."""

    _instance: FusionCache | None = None
    _instance_lock = threading.Lock()

    def __init__(self, max_fusions: int = 8192):
        self.max_fusions = max_fusions
        self._by_key: dict[tuple[str, ...], CacheEntry] = {}
        self._entries: list[CacheEntry] = []
        self._lock = threading.Lock()  # guards _by_key and _entries together

    @classmethod
    def get(
        cls,
        max_fusions: int = 8192,
        selected_device=None,
        load_from_default_workspace: bool = False,
    ) -> FusionCache:
        with cls._instance_lock:
            if cls._instance is None:
                cls._instance = FusionCache(max_fusions)
            return cls._instance

    @staticmethod
    def reset() -> None:
        """Forget every definition; ids start again at 0. Existing definitions keep working."""
        with FusionCache._instance_lock:
            FusionCache._instance = None

    def num_fusions(self) -> int:
        return len(self._entries)

    def entry(self, fusion_id: int) -> CacheEntry:
        with self._lock:
            count = len(self._entries)
            if isinstance(fusion_id, int) and 0 <= fusion_id < count:
                return self._entries[fusion_id]
        raise DefinitionError(
            f"FusionDefinition({fusion_id!r}): no fusion with this id in the "
            f"FusionCache ({count} fusions)"
        )

    def finalize(self, recorder: Recorder) -> CacheEntry:
        """The entry for a finished definition: an existing one when the records match."""
        key = tuple(recorder.lines)
        with self._lock:
            hit = self._by_key.get(key)
            if hit is not None:
                return hit
            if len(self._entries) >= self.max_fusions:
                raise DefinitionError(f"FusionCache is full: max_fusions={self.max_fusions}")
            entry = CacheEntry(len(self._entries), recorder)
            self._by_key[key] = entry
            self._entries.append(entry)
            return entry

    def serialize(self, filename: str) -> None:
        raise UnsupportedError("FusionCache.serialize: layoutfuse does not serialize its cache")

    def deserialize(self, filename: str) -> None:
        raise UnsupportedError("FusionCache.deserialize: layoutfuse does not serialize its cache")
