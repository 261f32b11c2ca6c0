"""Triton plumbing: load generated kernel source, run it, and compile it for Hopper offline.

A generated kernel module is written to a file named by the hash of its source and imported
twice: once as ordinary ``@triton.jit`` functions (CUDA tensors), once with Triton's interpreter
switched on while the module executes, so its jit functions, nested helpers included, become
``InterpretedFunction`` objects that run on CPU tensors in the same process. The interpreter
cannot run libdevice (``extern_elementwise``), so the interpreted module's ``libdevice`` is
replaced by :data:`INTERPRETER_LIBDEVICE`, which evaluates the same calls with NumPy.
Semantics found in Triton 3.6 are recorded in ``TRITON_NOTES.md`` beside this file.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import os
import re
import subprocess
import tempfile
import types
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import triton
import triton.language.extra.cuda.libdevice as cuda_libdevice
import triton.language.extra.libdevice as libdevice_stub
from triton._C.libtriton import native_specialize_impl
from triton.backends.compiler import BaseBackend, GPUTarget
from triton.compiler import ASTSource
from triton.language.semantic import TritonSemantic
from triton.runtime.interpreter import (
    InterpretedFunction,
    InterpreterBuilder,
    TensorHandle,
    _get_np_dtype,
    _patch_lang,
)
from triton.runtime.jit import JITFunction

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
    """Integer power by squaring (torch.pow of integers); exponents must be >= 0.

    ``a`` and ``b`` are broadcast first: the loop-carried ``result`` and ``base`` must keep
    one type, also when ``a`` is a scalar and ``b`` a tensor."""
    base, e = tl.broadcast(a, b)
    result = base * 0 + 1
    for _ in range(63):
        result = tl.where((e & 1) != 0, result * base, result)
        base = base * base
        e = e >> 1
    return result


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



# --- the libdevice stand-in for the interpreter -------------------------------------------


def _erf_family(name: str) -> Callable[[np.ndarray], np.ndarray]:
    fn = getattr(torch.special, name)
    return lambda a: fn(torch.from_numpy(np.ascontiguousarray(a))).numpy()


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
    "fmin": np.fmin, "fmax": np.fmax, "fma": lambda a, b, c: a * b + c,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "finite": np.isfinite,
    "signbit": np.signbit,
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


# --- Triton's own jit library (tl.sum, tl.max, tl.cdiv, ...) under the interpreter --------

# Keyed by id: hashing a JITFunction walks its dependencies, which fails mid-interpretation.
_INTERPRETED_LIBRARY: dict[int, tuple[JITFunction, InterpretedFunction]] = {}


def _call_interpreted(jit_fn: JITFunction, *args: Any, **kwargs: Any) -> Any:
    """``InterpretedFunction.__call__`` minus its leak: it never undoes its ``_patch_lang``."""
    if id(jit_fn) not in _INTERPRETED_LIBRARY:
        _INTERPRETED_LIBRARY[id(jit_fn)] = (jit_fn, InterpretedFunction(jit_fn.fn))
    interpreted = _INTERPRETED_LIBRARY[id(jit_fn)][1]
    scope = _patch_lang(jit_fn.fn)
    try:
        return interpreted.rewrite()(*args, **kwargs)
    finally:
        scope.restore()


class InterpretedKernel:
    """A kernel run by Triton's CPU interpreter: ``kernel[grid](*args, **meta)``.

    While it runs, calls of ``JITFunction`` objects go to the interpreter: ``triton.language``
    was imported without ``TRITON_INTERPRET``, so ``tl.sum`` and friends are ``JITFunction``
    objects whose ``__call__`` only raises (Triton's own interpreter mode imports them as
    ``InterpretedFunction`` objects instead).
    """

    def __init__(self, fn: InterpretedFunction) -> None:
        self.fn = fn

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            original, JITFunction.__call__ = JITFunction.__call__, _call_interpreted
            try:
                return self.fn[grid](*args, **kwargs)
            finally:
                JITFunction.__call__ = original

        return run


# --- loading generated source -------------------------------------------------------------


def kernel_cache_dir() -> Path:
    """Where generated kernel modules are written: ``$LAYOUTFUSE_CACHE_DIR`` or ~/.cache."""
    configured = os.environ.get("LAYOUTFUSE_CACHE_DIR")
    base = Path(configured) if configured else Path.home() / ".cache" / "layoutfuse" / "kernels"
    base.mkdir(parents=True, exist_ok=True)
    return base


@dataclass(frozen=True)
class LoadedKernel:
    """One kernel of a generated module in both execution modes."""

    name: str
    path: Path
    jit: JITFunction
    interpreted: InterpretedKernel
    module: types.ModuleType = field(repr=False, compare=False)

    def for_device(self, device_type: str) -> InterpretedKernel | JITFunction:
        """The interpreter for ``"cpu"``, the compiled kernel for ``"cuda"``."""
        if device_type == "cpu":
            return self.interpreted
        if device_type == "cuda":
            return self.jit
        raise ValueError(f"no Triton execution mode for device type {device_type!r}")


def _import_file(path: Path, module_name: str, interpret: bool) -> types.ModuleType:
    """Execute ``path`` as a fresh module with Triton's interpreter knob set to ``interpret``."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with triton.knobs.runtime.scope():  # restores the knob and TRITON_INTERPRET afterwards
        triton.knobs.runtime.interpret = interpret
        spec.loader.exec_module(module)
    return module


def _use_interpreter_libdevice(namespace: dict[str, Any]) -> None:
    libdevice_modules = {libdevice_stub.__name__, cuda_libdevice.__name__}
    for key, value in list(namespace.items()):
        if value is libdevice_stub or value is cuda_libdevice:
            namespace[key] = INTERPRETER_LIBDEVICE
        elif getattr(value, "__module__", None) in libdevice_modules and callable(value):
            namespace[key] = getattr(INTERPRETER_LIBDEVICE, value.__name__)


@functools.cache
def _import_source(source: str) -> tuple[Path, types.ModuleType, types.ModuleType]:
    """Write ``source`` once to a file named by its hash; import it compiled and interpreted."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    path = kernel_cache_dir() / f"kernel_{digest}.py"
    if not path.exists():
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            handle.write(source)
        os.replace(tmp, path)  # atomic: a concurrent reader never sees half a file
    jit_module = _import_file(path, f"layoutfuse_kernel_{digest}", interpret=False)
    interp_module = _import_file(path, f"layoutfuse_kernel_{digest}_interp", interpret=True)
    _use_interpreter_libdevice(interp_module.__dict__)
    return path, jit_module, interp_module


@functools.cache
def load_kernel(source: str, name: str) -> LoadedKernel:
    """Write ``source`` to the kernel cache, import it, and return its jit function ``name``."""
    path, jit_module, interp_module = _import_source(source)
    jit_fn = getattr(jit_module, name, None)
    if not isinstance(jit_fn, JITFunction):
        raise ValueError(f"{path} defines no @triton.jit function named {name!r}")
    interpreted = InterpretedKernel(getattr(interp_module, name))
    return LoadedKernel(name, path, jit_fn, interpreted, jit_module)


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
    _, module, _ = _import_source(kernel_or_source)
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
) -> CompiledArtifacts:
    """Compile for sm_90 without a GPU; results are cached in-process.

    ``signature`` maps every parameter to a Triton type (``'*fp32'``, ``'i32'``,
    ``'constexpr'``), ``constexprs`` gives the constexpr values, and ``attrs`` maps
    ``(param_index,)`` to ``[["tt.divisibility", 16]]`` (see :func:`signature_from_args`).
    """
    fn = _select_jit_function(kernel_or_source, signature)
    attrs = dict(attrs or {})
    key = (fn.cache_key, repr(signature), repr(constexprs), repr(attrs), num_warps, num_stages)
    if key not in _COMPILED:
        source = ASTSource(fn=fn, signature=dict(signature), constexprs=constexprs, attrs=attrs)
        options = {"num_warps": num_warps, "num_stages": num_stages}
        compiled = triton.compile(source, target=HOPPER, options=options)
        asm = compiled.asm
        _COMPILED[key] = CompiledArtifacts(
            fn.__name__, num_warps, asm["ttir"], asm["ttgir"], asm["ptx"], compiled.metadata.shared,
            asm["cubin"],
        )
    return _COMPILED[key]


def cubin_resources(cubin: bytes, name: str) -> dict[str, int]:
    """``cuobjdump -res-usage`` of kernel ``name`` in ``cubin`` (Triton's bundled cuobjdump)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as handle:
        handle.write(cubin)
        handle.flush()
        text = subprocess.run([triton.knobs.nvidia.cuobjdump.path, "-res-usage", handle.name],
                              capture_output=True, text=True, check=True).stdout
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
