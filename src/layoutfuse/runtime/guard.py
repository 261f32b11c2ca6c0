"""The cached call's check: does a call have the signature of the plan replayed last?

``replay.signature`` reads five accessors per tensor (shape, strides, dtype, device,
pointer), builds a tuple and hashes it: about 0.6 us a tensor in CPython, most of a
cached call's host time outside the allocations and launches. An executor therefore keeps
the plan it ran last behind a ``Guard``: one generated function that checks every tensor
input in one C++ call (torch's ``TensorGuards``: the exact Python type, the dispatch keys,
which fix the device type, the dtype, the device index, requires_grad, the sizes and the
strides), then each pointer's 16-byte remainder and each scalar input's type (and its value,
or its seed class, where the signature keys by those) against the signature's, then
replays the plan. A call that passes has the plan's signature; any other call (or a
guard that cannot be built: another torch) goes through the signature and the plans'
dictionary, as before.

``TensorGuards`` checks more than the signature holds (type, dispatch keys,
requires_grad): a call that differs only there fails the guard and replays through the
dictionary, whose hit rebinds the guard's tensor check to that call's tensors
(``Guard.rebind``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from .replay import LaunchPlan, seed_class

_TensorGuards: Any
try:
    from torch._C._dynamo.guards import TensorGuards as _TensorGuards
except ImportError:  # another torch: no guard, every call keys its signature
    _TensorGuards = None

Replay = Callable[..., Any]


def no_plan(inputs: Sequence[Any], device: Any = None) -> None:
    """The guard of an executor that has replayed nothing yet: every call misses."""
    return None


class Guard:
    """``fn(inputs, device=None)``: the plan's outputs for a call with its signature, else
    None (see the module docstring). ``plan``: the plan it replays; ``source``: the text of
    ``fn``."""

    def __init__(self, plan: LaunchPlan, source: str, env: dict[str, Any], tensors: list[int]):
        exec(compile(source, "<layoutfuse guard>", "exec"), env)
        self.plan, self.source, self._env, self._tensors = plan, source, env, tensors
        self.fn: Replay = env["guarded"]

    def rebind(self, inputs: Sequence[Any]) -> bool:
        """Check the tensors as ``inputs``' are (a call of the plan's signature that the
        guard refused: another type, dispatch keys or requires_grad); False when torch
        cannot check them."""
        check = _tensor_check([inputs[i] for i in self._tensors])
        if check is None:
            return False
        self._env["check"] = check
        return True


def _tensor_check(tensors: list[torch.Tensor]) -> Callable[..., bool] | None:
    if _TensorGuards is None:
        return None
    try:
        # both keywords given: without them torch 2.13 crashes (it reads them unchecked)
        guards = _TensorGuards(*tensors, dynamic_dims_sizes=None, dynamic_dims_strides=None)
    except Exception:  # tensors torch's check does not take
        return None
    check: Callable[..., bool] = guards.check
    return check


def build_guard(
    plan: LaunchPlan,
    inputs: Sequence[Any],
    device: Any,
    seeds: frozenset[int],
    move_scalars: Callable[[Sequence[Any]], Sequence[Any]] | None = None,
) -> Guard | None:
    """A guard for ``plan``, recorded for the signature of ``inputs`` (as the call gave
    them) and ``device``; None when it cannot be built. ``seeds``: the signature's seed
    positions. ``move_scalars``: applied to a passing call's inputs before the replay (the
    executor's move of 0-dim CPU tensors beside GPU inputs, done before the keying)."""
    tensors = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
    check = _tensor_check([inputs[i] for i in tensors]) if tensors else None
    if tensors and check is None:
        return None
    env: dict[str, Any] = {"plan": plan, "check": check, "seed_class": seed_class}
    names = [f"x{i}" for i in range(len(inputs))]
    refused = [f"len(inputs) != {len(inputs)}"]
    if device is None:
        refused.append("device is not None")
    else:
        env["device0"] = device
        refused.append("device != device0")
    tests = [_tensor_tests(inputs, tensors, names)] if tensors else []
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            continue
        if not isinstance(x, int | float):
            return None  # the signature keys nothing else
        env[f"type{i}"] = type(x)
        tests.append(f"type({names[i]}) is not type{i}")
        if isinstance(x, int) and i in seeds and type(x) is int:
            tests.append(f"seed_class({names[i]}) != {seed_class(x)!r}")
        elif isinstance(x, int):
            tests.append(f"{names[i]} != {x!r}")
    replay = "plan.replay(inputs)"
    if move_scalars is not None:
        env["move_scalars"] = move_scalars
        replay = "plan.replay(move_scalars(inputs))"
    unpack = f"    {', '.join(names)}, = inputs\n" if names else ""
    source = (
        "def guarded(inputs, device=None):\n"
        f"    if {' or '.join(refused)}:\n"
        "        return None\n"
        f"{unpack}"
        "    try:\n"
        f"        if {' or '.join(tests) or 'False'}:\n"
        "            return None\n"
        "    except Exception:  # an input the checks cannot read: not this signature\n"
        "        return None\n"
        f"    return {replay}\n"
    )
    return Guard(plan, source, env, tensors)


def _tensor_tests(inputs: Sequence[Any], tensors: list[int], names: list[str]) -> str:
    """The test that refuses a call whose tensors differ from ``inputs``': torch's check,
    then the pointers' 16-byte remainders (one test for all the aligned ones)."""
    rests = {i: inputs[i].data_ptr() & 15 for i in tensors}
    tests = [f"not check({', '.join(names[i] for i in tensors)})"]
    aligned = [f"{names[i]}.data_ptr()" for i, r in rests.items() if r == 0]
    if aligned:
        tests.append(f"({' | '.join(aligned)}) & 15")
    tests += [f"{names[i]}.data_ptr() & 15 != {r}" for i, r in rests.items() if r]
    return " or ".join(tests)
