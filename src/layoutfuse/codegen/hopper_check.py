"""Compile the kernels a run launched for sm_90, without a GPU (for tests and debugging).

``compile_last_run(executor)`` takes a FusionExecutor (its ``last_run`` record) and
returns one ``CompiledArtifacts`` per launch,
compiled with exactly the specialization Triton's launcher would have made for the
real arguments, so a test can assert on the PTX (``ld.global.v4``) of what ran.
"""

from __future__ import annotations

from .backend import CompiledArtifacts, compile_for_hopper, signature_from_args


def compile_launch(kernel, args, meta) -> CompiledArtifacts:
    names = kernel.jit.arg_names
    values = dict(zip(names, list(args) + [meta[n] for n in names[len(args) :]]))
    constexpr_names = [n for n in names[len(args) :]]
    spec = signature_from_args(values, constexpr_names)
    for p in kernel.jit.params:  # annotated parameters keep their type
        if p.annotation_type and not p.is_constexpr:
            spec.signature[p.name] = p.annotation_type
    return compile_for_hopper(
        kernel,
        spec.signature,
        spec.constexprs,
        num_warps=meta.get("num_warps", 4),
        attrs=spec.attrs,
        launch_pdl=bool(meta.get("launch_pdl", False)),
    )


def compile_last_run(executor) -> list[CompiledArtifacts]:
    record = getattr(executor, "last_run", None)
    if record is None:
        raise ValueError("the executor has not run any kernel yet")
    return [compile_launch(r.loaded, list(r.args), r.meta) for r in record.launches]
