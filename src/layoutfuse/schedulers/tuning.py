"""The schedulers' knobs in one value: a ``Tuning`` holds each scheduler's tuning
dataclass, by the scheduler's name.

The pipeline hands each scheduler its part (``Tuning.of(NAME)``), passed down to every
heuristic; ``FusionExecutor.configure(tuning=...)`` plans later runs with a variant
(``dataclasses.replace`` of a part: the benchmarks' tuner, tests of a rule at small
sizes). ``DEFAULT`` is every scheduler's measured defaults.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from . import measure, normalization, pointwise, reduction_tiles, scan
from .measure import MeasureTuning
from .normalization import NormalizationTuning
from .pointwise import PointwiseTuning
from .reduction_tiles import ReductionTuning
from .scan import ScanTuning


@dataclass(frozen=True)
class Tuning:
    """One tuning per scheduler, each field named as its scheduler (``NAME``), and the
    measured choice's (``schedulers/measure.py``)."""

    pointwise: PointwiseTuning = pointwise.DEFAULT_TUNING
    reduction: ReductionTuning = reduction_tiles.DEFAULT_TUNING
    normalization: NormalizationTuning = normalization.DEFAULT_TUNING
    scan: ScanTuning = scan.DEFAULT_TUNING
    measure: MeasureTuning = measure.DEFAULT_TUNING  # the measured choice (not a scheduler)

    def of(self, scheduler: str) -> Any:
        """The tuning of the scheduler named ``scheduler``."""
        return getattr(self, scheduler)

    def with_fields(self, **fields: dict[str, Any]) -> Tuning:
        """This tuning with fields of its parts replaced: ``with_fields(normalization=
        dict(max_tile=64), reduction=dict(ticket_steps=0))``."""
        parts = {
            name: dataclasses.replace(self.of(name), **values) for name, values in fields.items()
        }
        return dataclasses.replace(self, **parts)


DEFAULT = Tuning()
