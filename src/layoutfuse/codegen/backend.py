"""Triton plumbing: load generated kernel source, run it, and compile it for Hopper offline.

**Loading.** A generated module is stored in the kernel cache (``kernel_cache.py``: one
file per source, checked against a digest, rewritten when wrong, written atomically, refused
when others may write it). The file is there for Triton (``inspect.getsource``) and for people
reading tracebacks; what is executed is the checked text in memory, and ``linecache`` is
primed with it, so Triton's source readers see that text too, never later changes to the file.

The text is executed twice, into two modules: one whose jit functions are compiled for CUDA
tensors, one whose jit functions are run by Triton's interpreter for CPU tensors. The second's
``libdevice`` is :data:`INTERPRETER_LIBDEVICE`, which evaluates the same calls with NumPy (the
interpreter cannot run ``extern_elementwise``). Triton's ``interpret`` knob is never touched.

**Threads.** Triton's interpreter runs on process-wide state: a launch rebinds every builtin of
``triton.language`` to the interpreter's semantic (``_patch_lang``), and the program id lives in
one module-level ``interpreter_builder``. Two launches at once, or a CUDA compilation during one
(the compiler calls the same builtins), break each other. So :data:`TRITON_STATE`, one
process-wide shared/exclusive lock, guards exactly that: an interpreted launch holds it
exclusively, and only while it holds it are ``triton.language`` and ``triton.language.core``
patched, ``JITFunction.__call__`` routed to the interpreter (for ``tl.sum`` and the module's
helpers, which are plain ``JITFunction`` objects), ``InterpreterBuilder.cast_impl`` rounding
to nearest even and ``create_fp_to_fp`` converting fp8 as torch does; one scope restores all of it before the lock is released. CUDA launches
(:meth:`LoadedKernel.for_device`) and :func:`compile_for_hopper` hold it shared: they run
together, never during an interpreted launch, and flip nothing. NumPy's floating-point warnings
are silenced in interpreted launches (``np.errstate``, which is thread-local). The one change
made at import, :func:`_patch_interpreter_index`, is permanent and idempotent. Semantics found
in Triton 3.6 are recorded in ``TRITON_NOTES.md`` beside this file.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import linecache
import math
import re
import subprocess
import tempfile
import threading
import types
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import triton
import triton.language as tl
import triton.language.extra.cuda.libdevice as cuda_libdevice
import triton.language.extra.libdevice as libdevice_stub
from triton._C.libtriton import native_specialize_impl
from triton.backends.compiler import BaseBackend, GPUTarget
from triton.compiler import ASTSource
from triton.language.semantic import TritonSemantic
from triton.runtime.errors import InterpreterError
from triton.runtime.interpreter import (
    InterpretedFunction,
    InterpreterBuilder,
    TensorHandle,
    _get_np_dtype,
    _LangPatchScope,
    _patch_lang,
    interpreter_builder,
)
from triton.runtime.jit import JITFunction

from .kernel_cache import kernel_cache_dir as kernel_cache_dir  # re-exported
from .kernel_cache import stored_entry

PRELUDE = '''
@triton.jit
def _exp(x):
    """exp: on fp32 ``exp2(x * log2(e))``, which Triton lowers to ``ex2.approx.ftz.f32``
    (results below 2**-126 flush to 0); ``tl.exp`` lowers to the non-ftz
    ``ex2.approx.f32``, for which ptxas adds a compare and two predicated multiplies per
    element (5 instructions instead of 2). Other dtypes: ``tl.exp``."""
    if x.dtype == tl.float32:
        return tl.exp2(x * 1.4426950408889634)
    else:
        return tl.exp(x)


@triton.jit
def _remainder(a, b):
    """Python/torch remainder: the result has the sign of ``b`` (Triton's ``%`` truncates)."""
    r = a % b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)


@triton.jit
def _ipow(a, b):
    """Integer power by squaring (torch.pow of integers). A negative exponent gives what
    torch gives: 1 for a base of 1, -1 or 1 for -1 (odd or even exponent), else 0.

    ``a`` and ``b`` are broadcast first: the loop-carried ``result`` and ``base`` must keep
    one type, also when ``a`` is a scalar and ``b`` a tensor."""
    base, e = tl.broadcast(a, b)
    one = base * 0 + 1
    negative = tl.where(base == 1, one, tl.where(base == -1, tl.where((e & 1) != 0, -one, one), one * 0))
    below = e < 0
    result = one
    for _ in range(63):
        result = tl.where((e & 1) != 0, result * base, result)
        base = base * base
        e = e >> 1
    return tl.where(below, negative, result)


@triton.jit
def _floordiv(a, b):
    """Python/torch floor division of integers (Triton's ``//`` truncates toward zero)."""
    q = a // b
    return tl.where(((a % b) != 0) & ((a < 0) != (b < 0)), q - 1, q)
'''
"""Helper jit functions that generated modules paste after their imports."""

HOPPER = GPUTarget("cuda", 90, 32)


def _index_of_scalar_tensor(self) -> int:
    """``int(t)`` of an interpreted scalar tensor; numpy >= 2.4 refuses ``int()`` of a
    1-element array that is not 0-d, which Triton 3.6's interpreter relies on."""
    return int(np.asarray(self.handle.data).reshape(-1)[0])


def _patch_interpreter_index() -> None:
    from triton.runtime import interpreter as _interp

    original = _interp._patch_lang_tensor
    if getattr(original, "_layoutfuse", False):
        return

    def patched(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", _index_of_scalar_tensor)

    patched._layoutfuse = True
    _interp._patch_lang_tensor = patched


_patch_interpreter_index()


# --- the lock around Triton's process-wide state ------------------------------------------


class SharedExclusiveLock:
    """Shared holders run together; an exclusive holder runs alone. First come, first
    served: a request waits for every earlier one, so neither a stream of interpreted launches
    nor a stream of CUDA launches starves the other kind. Not reentrant."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next_ticket = 0  # the ticket the next request draws
        self._serving = 0  # the ticket allowed to try now
        self._shared = 0  # holders in shared mode
        self._exclusive = False

    def _acquire(self, exclusive: bool) -> None:
        with self._cond:
            ticket, self._next_ticket = self._next_ticket, self._next_ticket + 1
            self._cond.wait_for(
                lambda: (
                    self._serving == ticket
                    and not self._exclusive
                    and not (exclusive and self._shared)
                )
            )
            self._serving += 1
            if exclusive:
                self._exclusive = True
            else:
                self._shared += 1
            self._cond.notify_all()  # the next ticket may be shared too

    def _release(self, exclusive: bool) -> None:
        with self._cond:
            if exclusive:
                self._exclusive = False
            else:
                self._shared -= 1
            self._cond.notify_all()

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        self._acquire(exclusive=False)
        try:
            yield
        finally:
            self._release(exclusive=False)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        self._acquire(exclusive=True)
        try:
            yield
        finally:
            self._release(exclusive=True)


TRITON_STATE = SharedExclusiveLock()
"""Exclusive: an interpreted launch (it patches ``triton.language``); shared: CUDA launches
and compilations (they need it unpatched)."""


# --- the libdevice stand-in for the interpreter -------------------------------------------


def _erf_family(name: str) -> Callable[[np.ndarray], np.ndarray]:
    fn = getattr(torch.special, name)
    return lambda a: fn(torch.from_numpy(np.ascontiguousarray(a))).numpy()


def _fused_multiply_add(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` rounded once (as ``fma.rn``): fp32 in fp64, where the product is exact;
    fp64 in long double, whose exponent range keeps the product finite (its rounding is
    not always once)."""
    wide = np.float64 if np.asarray(a).dtype == np.float32 else np.longdouble
    return np.asarray(a, dtype=wide) * np.asarray(b, dtype=wide) + np.asarray(c, dtype=wide)


def _erfcinv(a: np.ndarray) -> np.ndarray:
    """erfc's inverse, ``-ndtri(a / 2) / sqrt(2)`` (NumPy and torch have none)."""
    x = torch.from_numpy(np.ascontiguousarray(a))
    return (-torch.special.ndtri(x / 2) / np.sqrt(2.0)).numpy()


# libdevice entry (symbol without "__nv_", "fast_" and the trailing f/d) -> NumPy semantics.
# fmt: off
_LIBDEVICE_NUMPY: dict[str, Callable[..., np.ndarray]] = {
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda a: np.power(a.dtype.type(10), a),
    "expm1": np.expm1, "log": np.log, "log1p": np.log1p, "log2": np.log2, "log10": np.log10,
    "sqrt": np.sqrt, "rsqrt": lambda a: 1 / np.sqrt(a), "cbrt": np.cbrt,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
    "erf": _erf_family("erf"), "erfc": _erf_family("erfc"), "erfinv": _erf_family("erfinv"),
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "nearbyint": np.rint, "rint": np.rint,
    "round": lambda a: np.copysign(np.floor(np.abs(a) + a.dtype.type(0.5)), a),
    "abs": np.abs, "llabs": np.abs, "fabs": np.abs, "fmod": np.fmod, "pow": np.power,
    "powi": np.power, "atan2": np.arctan2, "hypot": np.hypot, "copysign": np.copysign,
    "fmin": np.fmin, "fmax": np.fmax, "fma": _fused_multiply_add,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "finite": np.isfinite,
    "signbit": np.signbit, "erfcinv": _erfcinv, "lgamma": _erf_family("gammaln"),
    "nextafter": np.nextafter,
}
# fmt: on


class _LibdeviceBuilder(InterpreterBuilder):
    """Interpreter builder that evaluates libdevice calls with :data:`_LIBDEVICE_NUMPY`."""

    def create_extern_elementwise(self, libName, libPath, symbol, argList, retType, isPure):
        name = symbol.removeprefix("__nv_").removeprefix("fast_")
        if name not in _LIBDEVICE_NUMPY and name[-1:] in ("f", "d"):
            name = name[:-1]
        if name not in _LIBDEVICE_NUMPY:
            raise NotImplementedError(f"libdevice {symbol} has no interpreter implementation")
        scalar_type = retType.scalar
        with np.errstate(all="ignore"):
            out = _LIBDEVICE_NUMPY[name](*(arg.data for arg in argList))
        return TensorHandle(np.asarray(out).astype(_get_np_dtype(scalar_type)), scalar_type)


def _make_interpreter_libdevice() -> types.SimpleNamespace:
    semantic = TritonSemantic(_LibdeviceBuilder())
    members = inspect.getmembers(cuda_libdevice, triton.language.core.is_builtin)
    return types.SimpleNamespace(
        **{name: functools.partial(fn, _semantic=semantic) for name, fn in members}
    )


INTERPRETER_LIBDEVICE = _make_interpreter_libdevice()
"""Drop-in for ``triton.language.extra.libdevice`` inside interpreted kernels."""

# --- casts the interpreter gets wrong -----------------------------------------------------

_TRITON_CAST = InterpreterBuilder.cast_impl


def fp32_to_bf16_bits(data: np.ndarray) -> np.ndarray:
    """fp32 values as bf16 bit patterns (uint16), rounded to nearest even as torch rounds them;
    every NaN becomes 0xFFFF, as torch's CPU kernels make it. Values past bf16's largest
    finite one round to infinity."""
    values = np.asarray(data, dtype=np.float32)
    bits = values.view(np.uint32).astype(np.uint64)  # room for the carry
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return np.where(np.isnan(values), 0xFFFF, rounded).astype(np.uint16)


def bf16_bits_to_fp32(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (uint16) as fp32 values: exact."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _cast_rounding_to_nearest_even(self, src: TensorHandle, dst_type) -> TensorHandle:
    """``InterpreterBuilder.cast_impl`` with bf16 converted as torch converts it: through fp32,
    rounded to nearest even. Triton's truncates fp32 -> bf16, and reads the uint16 bit patterns
    as integers in fp64/int -> bf16 (casts its semantic does not route through fp32). Other casts
    are Triton's: NumPy's ``astype``, which rounds fp32/fp64 -> fp16 to nearest even."""
    src_type, dst_scalar = src.dtype.scalar, dst_type.scalar
    if src_type == tl.bfloat16 and dst_scalar != tl.bfloat16:
        data = bf16_bits_to_fp32(src.data).astype(_get_np_dtype(dst_scalar))
        return TensorHandle(data, dst_scalar)
    if dst_scalar == tl.bfloat16 and src_type != tl.bfloat16:
        return TensorHandle(fp32_to_bf16_bits(src.data.astype(np.float32)), dst_scalar)
    return _TRITON_CAST(self, src, dst_type)


_TRITON_FP_TO_FP = InterpreterBuilder.create_fp_to_fp
_FP8_TORCH = {tl.float8e4nv: torch.float8_e4m3fn, tl.float8e5: torch.float8_e5m2}


def _fp_to_fp_through_torch(self, src: TensorHandle, dst_type, rounding_mode) -> TensorHandle:
    """``InterpreterBuilder.create_fp_to_fp`` with fp8 converted by torch (exactly, both ways):
    Triton's reads the fp8 exponent's top value as a number (e4m3fn NaN as 480, e5m2 inf as
    65536) and rounds half up without carrying into the exponent."""
    src_scalar, dst_scalar = src.dtype.scalar, dst_type.scalar
    if src_scalar not in _FP8_TORCH and dst_scalar not in _FP8_TORCH:
        return _TRITON_FP_TO_FP(self, src, dst_type, rounding_mode)
    data = np.ascontiguousarray(src.data)
    if src_scalar in _FP8_TORCH:
        values = torch.from_numpy(data.view(np.uint8)).view(_FP8_TORCH[src_scalar]).float()
    elif src_scalar == tl.bfloat16:
        values = torch.from_numpy(bf16_bits_to_fp32(data))
    else:
        values = torch.from_numpy(data)
    if dst_scalar in _FP8_TORCH:
        out = values.float().to(_FP8_TORCH[dst_scalar]).view(torch.uint8).numpy()
    elif dst_scalar == tl.bfloat16:
        out = fp32_to_bf16_bits(values.float().numpy())
    else:
        out = values.numpy().astype(_get_np_dtype(dst_scalar))
    return TensorHandle(out.reshape(np.shape(src.data)), dst_scalar)


_TRITON_SCALAR_CONSTANT = TritonSemantic.scalar_constant


def _scalar_constant_keeping_negative_zero(self, value, dtype):
    """``TritonSemantic.scalar_constant`` that keeps -0.0: Triton makes any value equal to 0 a
    null (+0.0) constant, and the interpreter passes a float kernel argument as a Python
    float, so a -0.0 scalar input would reach the kernel as +0.0."""
    if (
        isinstance(value, float)
        and value == 0
        and math.copysign(1.0, value) < 0
        and dtype in (tl.float32, tl.float64)
    ):
        return self.tensor(getattr(self.builder, f"get_{dtype.name}")(value), dtype)
    return _TRITON_SCALAR_CONSTANT(self, value, dtype)


# --- interpreted launches -----------------------------------------------------------------

# Keyed by id: hashing a JITFunction walks its dependencies, which fails mid-interpretation.
_INTERPRETED: dict[int, tuple[JITFunction, InterpretedFunction]] = {}

_LANG_MODULES = types.FunctionType((lambda: None).__code__, {"tl": tl, "core": tl.core})
"""A function that sees ``triton.language`` and ``triton.language.core``: what ``_patch_lang``
patches is the language modules found in a function's globals, and a generated kernel sees
``tl`` while the ``tl.standard`` functions it calls see ``core``."""


_EXTERN_ELEMENTWISE = tl.core.extern_elementwise


def _interpreted(jit_fn: JITFunction) -> InterpretedFunction:
    """The interpreter's version of ``jit_fn``, its source rewritten once."""
    entry = _INTERPRETED.get(id(jit_fn))
    if entry is None:
        entry = (jit_fn, InterpretedFunction(jit_fn.fn))
        entry[1].rewrite()
        _INTERPRETED[id(jit_fn)] = entry
    return entry[1]


def _call_interpreted(jit_fn: JITFunction, *args: Any, **kwargs: Any) -> Any:
    """``JITFunction.__call__`` during an interpreted launch: a device function call
    (``tl.sum``, a module's helper), run by the interpreter in the launch's patched scope."""
    return _interpreted(jit_fn).rewrite()(*args, **kwargs)


def _interpreter_scope() -> _LangPatchScope:
    """Patch what an interpreted launch needs patched; the caller holds ``TRITON_STATE``
    exclusively and restores the returned scope before releasing it."""
    scope = _patch_lang(_LANG_MODULES)
    # libdevice's functions pass their own _semantic (INTERPRETER_LIBDEVICE's NumPy builder)
    # to core.extern_elementwise, which the patch above would drop.
    scope.set_attr(tl.core, "extern_elementwise", _EXTERN_ELEMENTWISE)
    scope.set_attr(JITFunction, "__call__", _call_interpreted)
    scope.set_attr(InterpreterBuilder, "cast_impl", _cast_rounding_to_nearest_even)
    scope.set_attr(InterpreterBuilder, "create_fp_to_fp", _fp_to_fp_through_torch)
    scope.set_attr(TritonSemantic, "scalar_constant", _scalar_constant_keeping_negative_zero)
    # ``tl.device_assert`` evaluated (an index the fusion computes, out of range): the
    # interpreter's builder drops asserts unless its options say debug
    options = interpreter_builder.options
    scope.set_attr(
        interpreter_builder, "options", replace(options, debug=True, sanitize_overflow=False)
    )
    # grid dependency control: the interpreter runs a launch after the one before it has
    # finished, which is what ``gdc_wait`` waits for; nothing to launch early
    for name in ("gdc_wait", "gdc_launch_dependents"):
        scope.set_attr(tl.extra.cuda, name, _no_grid_dependency)
    return scope


def _no_grid_dependency(*args: Any, **kwargs: Any) -> None:
    """``gdc_wait`` / ``gdc_launch_dependents`` in an interpreted launch: nothing to do."""


class InterpretedKernel:
    """A kernel run by Triton's CPU interpreter: ``kernel[grid](*args, **meta)``.

    One launch at a time in the process (``TRITON_STATE`` held exclusively), with the
    interpreter's patches applied for exactly that launch and NumPy's floating-point warnings
    (NaN, inf, division by zero in masked-out lanes) silenced.
    """

    def __init__(self, fn: InterpretedFunction) -> None:
        self.fn = fn

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            with TRITON_STATE.exclusive(), np.errstate(all="ignore"):
                scope = _interpreter_scope()
                kwargs.pop("launch_pdl", None)  # a compile option of the GPU's launches
                try:
                    return self.fn[grid](*args, **kwargs)
                except InterpreterError as e:
                    index_error = _index_error(e)
                    if index_error is None:
                        raise
                    raise index_error from e
                finally:
                    scope.restore()

        return run


def _index_error(e: InterpreterError) -> IndexError | None:
    """An interpreted launch stopped by an indexed read's ``tl.device_assert`` (an index the
    fusion computes, out of range: input indices are checked before the launch), as the
    ``IndexError`` torch raises on the CPU; None for any other error."""
    cause = e.__cause__
    if isinstance(cause, AssertionError) and str(cause).endswith("index out of range"):
        return IndexError(f"{cause}: an index the fusion computes is outside the indexed dim")
    return None


class CudaKernel:
    """A compiled kernel: ``kernel[grid](*args, **meta)`` is the jit function's launch, with
    ``TRITON_STATE`` held shared (no interpreted launch patches ``triton.language`` while
    Triton compiles or launches it). Returns what the jit launch returns."""

    def __init__(self, jit: JITFunction) -> None:
        self.jit = jit

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        launcher = self.jit[grid]

        def run(*args: Any, **kwargs: Any) -> Any:
            with TRITON_STATE.shared():
                return launcher(*args, **kwargs)

        return run


# --- loading generated source -------------------------------------------------------------


@dataclass(frozen=True)
class LoadedKernel:
    """One kernel of a generated module in both execution modes."""

    name: str
    path: Path
    jit: JITFunction
    interpreted: InterpretedKernel
    module: types.ModuleType = field(repr=False, compare=False)

    def for_device(self, device_type: str) -> InterpretedKernel | CudaKernel:
        """The interpreter for ``"cpu"``, the compiled kernel for ``"cuda"``."""
        if device_type == "cpu":
            return self.interpreted
        if device_type == "cuda":
            return CudaKernel(self.jit)
        raise ValueError(f"no Triton execution mode for device type {device_type!r}")


@dataclass(frozen=True)
class _Modules:
    """A generated source executed twice: for the compiler and for the interpreter."""

    path: Path
    jit: types.ModuleType
    interpreted: types.ModuleType


_MODULES: dict[str, _Modules] = {}
_KERNELS: dict[tuple[str, str], LoadedKernel] = {}
_LOAD_LOCK = threading.RLock()


def _execute(code: types.CodeType, name: str, path: Path) -> types.ModuleType:
    """A fresh module from ``code``, its jit functions ``JITFunction`` objects whatever the
    interpret knob says (under ``TRITON_INTERPRET=1``, ``@triton.jit`` makes interpreted ones)."""
    module = types.ModuleType(name)
    module.__file__ = str(path)
    exec(code, module.__dict__)
    for key, value in list(vars(module).items()):
        if isinstance(value, InterpretedFunction):
            setattr(module, key, JITFunction(value.fn))
    return module


def _use_interpreter_libdevice(namespace: dict[str, Any]) -> None:
    libdevice_modules = {libdevice_stub.__name__, cuda_libdevice.__name__}
    for key, value in list(namespace.items()):
        if value is libdevice_stub or value is cuda_libdevice:
            namespace[key] = INTERPRETER_LIBDEVICE
        elif getattr(value, "__module__", None) in libdevice_modules and callable(value):
            namespace[key] = getattr(INTERPRETER_LIBDEVICE, value.__name__)


def _import_entry(source: str) -> _Modules:
    """Store ``source``'s entry, then execute the checked text as two modules."""
    path, entry = stored_entry(source)
    text = entry.decode()
    # What inspect (Triton's JITFunction, the interpreter's rewriter) reads: this text,
    # never the file (an mtime of None keeps linecache.checkcache from reloading it).
    linecache.cache[str(path)] = (len(text), None, text.splitlines(keepends=True), str(path))
    code = compile(text, str(path), "exec")
    jit_module = _execute(code, f"layoutfuse_{path.stem}", path)
    interp_module = _execute(code, f"layoutfuse_{path.stem}_interp", path)
    _use_interpreter_libdevice(interp_module.__dict__)
    for value in list(vars(interp_module).values()):
        if isinstance(value, JITFunction):
            _interpreted(value)  # rewritten now, from the text above
    return _Modules(path, jit_module, interp_module)


def _import_source(source: str) -> _Modules:
    """``source``'s modules, stored and executed once per process."""
    with _LOAD_LOCK:
        if source not in _MODULES:
            _MODULES[source] = _import_entry(source)
        return _MODULES[source]


def load_kernel(source: str, name: str) -> LoadedKernel:
    """Store ``source`` in the kernel cache, import it, and return its jit function ``name``
    (one object per ``(source, name)`` in a process; safe to call from several threads)."""
    with _LOAD_LOCK:
        if (source, name) not in _KERNELS:
            modules = _import_source(source)
            jit_fn = getattr(modules.jit, name, None)
            if not isinstance(jit_fn, JITFunction):
                raise ValueError(f"{modules.path} defines no @triton.jit function named {name!r}")
            interpreted = InterpretedKernel(_interpreted(getattr(modules.interpreted, name)))
            _KERNELS[source, name] = LoadedKernel(
                name, modules.path, jit_fn, interpreted, modules.jit
            )
        return _KERNELS[source, name]


def launch(kernel: LoadedKernel, grid: Any, *args: Any, device_type: str, **meta: Any) -> Any:
    """Run ``kernel`` over ``grid``: interpreted for ``"cpu"``, compiled for ``"cuda"``."""
    return kernel.for_device(device_type)[grid](*args, **meta)


# --- offline compilation for sm_90 --------------------------------------------------------


@dataclass(frozen=True)
class Specialization:
    """What Triton's launcher would specialize on: signature, constexprs, divisibility."""

    signature: dict[str, str]
    constexprs: dict[str, object]
    attrs: dict[tuple[int, ...], list[list[Any]]]


def signature_from_args(
    args: Mapping[str, object], constexpr_names: Iterable[str]
) -> Specialization:
    """Derive the specialization Triton's JIT launcher makes for ``args`` (in parameter order).

    Tensors become ``*fp32``/``*bf16``/...; ints ``i32``/``i64`` by magnitude, and an int equal
    to 1 (or None) a constexpr, as the launcher does; 16-byte aligned pointers and ints divisible
    by 16 get ``tt.divisibility = 16``.
    """
    constexpr_names = set(constexpr_names)
    signature: dict[str, str] = {}
    constexprs: dict[str, object] = {}
    attrs: dict[tuple[int, ...], list[list[Any]]] = {}
    for index, (name, value) in enumerate(args.items()):
        if name in constexpr_names:
            kind, attr = "constexpr", None
        else:
            kind, attr = native_specialize_impl(BaseBackend, value, False, True, True)
        signature[name] = kind
        if kind == "constexpr":
            constexprs[name] = value
        elif isinstance(attr, str) and BaseBackend.parse_attr(attr):
            attrs[(index,)] = BaseBackend.parse_attr(attr)
    return Specialization(signature, constexprs, attrs)


@dataclass(frozen=True)
class CompiledArtifacts:
    """Text of one kernel compiled for sm_90."""

    name: str
    num_warps: int
    ttir: str = field(repr=False)
    ttgir: str = field(repr=False)
    ptx: str = field(repr=False)
    shared_bytes: int = 0
    cubin: bytes = field(default=b"", repr=False)

    @property
    def vector_widths(self) -> dict[str, int]:
        return ptx_vector_widths(self.ptx)

    @functools.cached_property
    def resources(self) -> dict[str, int]:
        """ptxas's resource use per thread: ``{'REG': 40, 'STACK': 0, 'LOCAL': 0, ...}``
        (register spills show as LOCAL bytes)."""
        return cubin_resources(self.cubin, self.name)

    @property
    def local_bytes(self) -> int:
        """Local memory per thread: register spills (LOCAL) plus the stack frame (STACK,
        where ptxas also puts spilled values); 0 for a kernel that lives in registers."""
        res = self.resources
        return res.get("LOCAL", 0) + res.get("STACK", 0)


_COMPILED: dict[tuple[Any, ...], CompiledArtifacts] = {}


def _select_jit_function(kernel_or_source: Any, signature: Mapping[str, str]) -> JITFunction:
    """The kernel itself, or the one jit function of a source whose parameters are the keys."""
    if isinstance(kernel_or_source, LoadedKernel):
        return kernel_or_source.jit
    if isinstance(kernel_or_source, JITFunction):
        return kernel_or_source
    module = _import_source(kernel_or_source).jit
    names = list(signature)
    matches = [f for f in vars(module).values() if getattr(f, "arg_names", None) == names]
    if len(matches) != 1 or not isinstance(matches[0], JITFunction):
        raise ValueError(f"{len(matches)} jit functions take exactly the parameters {names}")
    return matches[0]


def compile_for_hopper(
    kernel_or_source: LoadedKernel | JITFunction | str,
    signature: dict[str, str],
    constexprs: dict[str, object],
    num_warps: int = 4,
    *,
    attrs: Mapping[tuple[int, ...], list[list[Any]]] | None = None,
    num_stages: int = 3,
    launch_pdl: bool = False,
) -> CompiledArtifacts:
    """Compile for sm_90 without a GPU; results are cached in-process.

    ``signature`` maps every parameter to a Triton type (``'*fp32'``, ``'i32'``,
    ``'constexpr'``), ``constexprs`` gives the constexpr values, and ``attrs`` maps
    ``(param_index,)`` to ``[["tt.divisibility", 16]]`` (see :func:`signature_from_args`).
    """
    fn = _select_jit_function(kernel_or_source, signature)
    attrs = dict(attrs or {})
    key = (
        fn.cache_key,
        repr(signature),
        repr(constexprs),
        repr(attrs),
        num_warps,
        num_stages,
        launch_pdl,
    )
    if key not in _COMPILED:
        source = ASTSource(fn=fn, signature=dict(signature), constexprs=constexprs, attrs=attrs)
        options = {"num_warps": num_warps, "num_stages": num_stages, "launch_pdl": launch_pdl}
        with TRITON_STATE.shared():  # no interpreted launch patches tl meanwhile
            compiled = triton.compile(source, target=HOPPER, options=options)
        asm = compiled.asm
        _COMPILED[key] = CompiledArtifacts(
            fn.__name__,
            num_warps,
            asm["ttir"],
            asm["ttgir"],
            asm["ptx"],
            compiled.metadata.shared,
            asm["cubin"],
        )
    return _COMPILED[key]


def cubin_resources(cubin: bytes, name: str) -> dict[str, int]:
    """``cuobjdump -res-usage`` of kernel ``name`` in ``cubin`` (Triton's bundled cuobjdump)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as handle:
        handle.write(cubin)
        handle.flush()
        text = subprocess.run(
            [triton.knobs.nvidia.cuobjdump.path, "-res-usage", handle.name],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    usage = re.search(rf"Function {re.escape(name)}:\s*\n\s*(.*)", text)
    if usage is None:
        raise ValueError(f"cuobjdump reports no function {name!r}:\n{text}")
    return {k: int(v) for k, v in re.findall(r"(\w+)(?:\[\d+\])?:(\d+)", usage.group(1))}


_GLOBAL_ACCESS = re.compile(r"\b(ld|st)\.global((?:\.[\w:]+)*)")


def ptx_vector_widths(ptx: str) -> dict[str, int]:
    """Count global loads and stores by vector width: ``{'ld.global.v4': 2, 'st.global.v1': 1}``."""
    counts: Counter[str] = Counter()
    for op, qualifiers in _GLOBAL_ACCESS.findall(ptx):
        width = next((q for q in qualifiers.split(".") if re.fullmatch(r"v\d+", q)), "v1")
        counts[f"{op}.global.{width}"] += 1
    return dict(counts)
