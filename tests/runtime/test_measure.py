"""The measured choice's timing half (``runtime/measure.py``), run on the CPU interpreter
(``MeasureTuning.devices`` names it; the defaults time on the GPU only): a transpose's
candidates are timed once, the fastest runs the call and is kept, in the process and on
disk; a record is read back instead of timing, a damaged one is measured again with a
warning; a candidate that fails is not chosen; threads that meet a problem together
time it once; a segment that could not run twice alike, or a tuner's heuristics, is not
timed; the results are the plain run's."""

from __future__ import annotations

import json
import threading
import warnings

import pytest
import torch

from layoutfuse.analysis.device import device_info
from layoutfuse.errors import KernelCacheWarning
from layoutfuse.nvfuser import FusionCache, FusionDefinition
from layoutfuse.runtime import measure
from layoutfuse.runtime.pipeline import _repeatable, default_heuristics
from layoutfuse.schedulers import pointwise as pw
from layoutfuse.schedulers.tuning import DEFAULT
from support.execution import configured

REAL_TIME_RUNS = measure.time_runs
ON_CPU = DEFAULT.with_fields(measure=dict(devices=("cpu", "cuda"), min_l2=0.0, rounds=1))
pytestmark = pytest.mark.measured  # the measured choice on (tests/conftest.py)


@pytest.fixture(autouse=True)
def fresh_choices(monkeypatch, tmp_path):
    """Each test: no choice in the process, a cache directory of its own."""
    monkeypatch.setenv("LAYOUTFUSE_CACHE_DIR", str(tmp_path / "kernels"))
    measure.forget()
    yield
    measure.forget()


def transpose(x: torch.Tensor, tuning=ON_CPU) -> FusionDefinition:
    """``x`` (row-major) copied to a column-major output: a transpose, three tiles."""
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.set(fd.from_pytorch(x)), stride_order=[0, 1])
    return configured(fd, tuning=tuning)


def scripted(monkeypatch, times):
    """``time_runs`` returning ``times`` in call order (each run once, so it still runs);
    a time that is an exception is raised. Returns the list of calls made."""
    calls = []

    def fake(run, clock, tuning):
        t = times[len(calls)]
        calls.append(t)
        if isinstance(t, Exception):
            raise t
        REAL_TIME_RUNS(run, clock, tuning)
        return t

    monkeypatch.setattr(measure, "time_runs", fake)
    return calls


def segment_run(fd):
    (seg,) = fd.executor().last_run.segments
    return seg


@pytest.mark.parametrize(
    "times, winner",
    [
        ((5.0, 4.9, 4.95), 0),  # 2% faster: within min_gain (3%), the rule's plan runs
        ((5.0, 4.8, 4.95), 1),  # 4% faster: it wins
        ((5.0, 5.2, 5.1), 0),  # none faster
    ],
)
def test_another_plan_wins_only_by_min_gain(monkeypatch, times, winner):
    x = torch.randn(64, 96).to(torch.bfloat16)
    fd = transpose(x)
    scripted(monkeypatch, list(times))
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    assert segment_run(fd).measured.winner == winner


def test_rounds_alternate_the_order_and_keep_each_best(monkeypatch):
    """Two rounds: forward (5, 4, 6), then backward (candidates 2, 1, 0: 6, 4.5, 3.5). The
    rule's plan, slow when timed first, is 3.5 at its best: it wins."""
    x = torch.randn(64, 96).to(torch.bfloat16)
    on_both = dict(devices=("cpu", "cuda"), min_l2=0.0, rounds=2)  # --device cuda too
    fd = transpose(x, DEFAULT.with_fields(measure=on_both))
    calls = scripted(monkeypatch, [5.0, 4.0, 6.0, 6.0, 4.5, 3.5])
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    assert calls == [5.0, 4.0, 6.0, 6.0, 4.5, 3.5]
    seg = segment_run(fd)
    assert seg.measured.times_ms == (3.5, 4.0, 6.0) and seg.measured.winner == 0


def test_the_fastest_candidate_runs_and_is_recorded(monkeypatch):
    x = torch.randn(64, 96).to(torch.bfloat16)
    fd = transpose(x)
    calls = scripted(monkeypatch, [5.0, 1.0, 3.0])
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    assert out.stride() == (1, 64)
    seg = segment_run(fd)
    assert calls == [5.0, 1.0, 3.0]
    assert seg.measured.winner == 1 and seg.measured.times_ms == (5.0, 1.0, 3.0)
    assert not seg.measured.recorded and seg.measured.cost_s > 0
    assert "measured: candidate 2 of 3" in seg.reason
    rule = pw.heuristics(seg.problem, device_info("cpu"))
    assert seg.params != rule and seg.params.transpose
    # the record on disk holds the winner, under the key of these candidates
    (record,) = measure.kernel_cache.kernel_cache_dir().glob("choice_*.json")
    doc = json.loads(record.read_bytes())
    assert doc["winner"] == 1 and doc["times_ms"] == [5.0, 1.0, 3.0]
    # a second call replays: nothing timed again
    (again,) = fd.execute([x])
    torch.testing.assert_close(again, x, rtol=0, atol=0)
    assert len(calls) == 3


def test_nothing_is_timed_while_a_cuda_graph_is_captured(monkeypatch):
    """While the stream captures a graph (``measure.capturing``), a problem nothing is
    known of runs the rule's plan untimed and unrecorded (the clock would synchronize, the
    timed runs join the graph); a choice made before, in the process or on disk, is still
    taken."""
    x = torch.randn(64, 96).to(torch.bfloat16)
    calls = scripted(monkeypatch, [5.0, 1.0, 3.0])
    monkeypatch.setattr(measure, "capturing", lambda device: True)
    fd = transpose(x)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    seg = segment_run(fd)
    assert calls == [] and seg.measured is None
    assert seg.params == pw.heuristics(seg.problem, device_info("cpu"))
    assert not list(measure.kernel_cache.kernel_cache_dir().glob("choice_*.json"))
    monkeypatch.setattr(measure, "capturing", lambda device: False)
    transpose(x).execute([x])  # a new definition, not capturing: timed, candidate 2 wins
    assert calls == [5.0, 1.0, 3.0]
    monkeypatch.setattr(measure, "capturing", lambda device: True)
    fd = transpose(x)
    fd.execute([x])
    assert len(calls) == 3 and segment_run(fd).measured.winner == 1


def test_a_record_is_read_back_without_timing(monkeypatch):
    x = torch.randn(64, 96).to(torch.bfloat16)
    scripted(monkeypatch, [5.0, 1.0, 3.0])
    transpose(x).execute([x])
    measure.forget()  # another process: only the record on disk
    calls = scripted(monkeypatch, [])
    fd = transpose(x)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    seg = segment_run(fd)
    assert calls == [] and seg.measured.recorded and seg.measured.winner == 1
    assert seg.measured.cost_s == 0 and "recorded" in seg.reason


@pytest.mark.parametrize(
    "damage",
    [b"", b"{not json", b'{"format": "layoutfuse-choice-1"}', "winner"],
    ids=["empty", "garbled", "fields-missing", "winner-out-of-range"],
)
def test_a_damaged_record_is_measured_again(monkeypatch, damage):
    x = torch.randn(64, 96).to(torch.bfloat16)
    scripted(monkeypatch, [5.0, 1.0, 3.0])
    transpose(x).execute([x])
    (record,) = measure.kernel_cache.kernel_cache_dir().glob("choice_*.json")
    if damage == "winner":
        doc = json.loads(record.read_bytes())
        doc["winner"] = 7
        damage = json.dumps(doc).encode()
    record.write_bytes(damage)
    measure.forget()
    calls = scripted(monkeypatch, [2.0, 4.0, 1.0])
    fd = transpose(x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (out,) = fd.execute([x])
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    assert any(
        issubclass(w.category, KernelCacheWarning) and "damaged" in str(w.message) for w in caught
    )
    assert len(calls) == 3 and segment_run(fd).measured.winner == 2
    assert json.loads(record.read_bytes())["winner"] == 2  # rewritten whole


def test_a_candidate_that_fails_is_not_chosen(monkeypatch):
    x = torch.randn(64, 96).to(torch.bfloat16)
    scripted(monkeypatch, [5.0, RuntimeError("out of resources"), 4.0])
    fd = transpose(x)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    assert segment_run(fd).measured.times_ms == (5.0, None, 4.0)
    assert segment_run(fd).measured.winner == 2


def test_the_rules_plan_failing_is_an_error(monkeypatch):
    x = torch.randn(64, 96).to(torch.bfloat16)
    scripted(monkeypatch, [RuntimeError("broken"), 1.0, 1.0])
    with pytest.raises(RuntimeError, match="broken"):
        transpose(x).execute([x])


def test_real_timing_picks_one_of_the_candidates():
    x = torch.randn(48, 80)
    fd = transpose(x)
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    seg = segment_run(fd)
    assert len(seg.measured.times_ms) == 3 and all(t > 0 for t in seg.measured.times_ms)
    times, won = seg.measured.times_ms, seg.measured.winner
    best = min(times)
    # the fastest, unless it beats the rule's plan by less than min_gain
    gain = DEFAULT.measure.min_gain
    assert times[won] == best if best < times[0] * (1 - gain) else won == 0


def test_threads_meeting_a_problem_time_it_once(monkeypatch):
    x = torch.randn(64, 96).to(torch.bfloat16)
    calls = scripted(monkeypatch, [5.0, 1.0, 3.0] + [99.0] * 9)
    fds = [transpose(x) for _ in range(4)]
    outs, errors = [None] * 4, []

    def work(i):
        try:
            (outs[i],) = fds[i].execute([x])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(calls) == 3
    for fd, out in zip(fds, outs):
        torch.testing.assert_close(out, x, rtol=0, atol=0)
        assert segment_run(fd).measured.winner == 1


def test_not_timed_by_default_on_the_cpu_nor_under_a_tuner(monkeypatch):
    calls = scripted(monkeypatch, [])
    x = torch.randn(64, 96).to(torch.bfloat16)
    fd = transpose(x, tuning=DEFAULT)
    fd.execute([x])
    assert segment_run(fd).measured is None and "measured" not in segment_run(fd).reason
    fd = transpose(x)
    configured(fd, tuning=ON_CPU, heuristics=default_heuristics)
    fd.execute([x])
    assert segment_run(fd).measured is None and calls == []


def test_the_environment_turns_it_off(monkeypatch):
    calls = scripted(monkeypatch, [])
    monkeypatch.setenv("LAYOUTFUSE_MEASURE", "0")
    x = torch.randn(64, 96).to(torch.bfloat16)
    fd = transpose(x)
    fd.execute([x])
    assert segment_run(fd).measured is None and calls == []


def test_a_segment_writing_what_it_reads_is_not_repeatable(monkeypatch):
    """A store into memory a load reads (an output aliased to its input): a second run
    would read the first one's results."""
    x = torch.randn(64, 96)
    scripted(monkeypatch, [5.0, 1.0, 3.0])
    fd = transpose(x)
    (out,) = fd.execute([x])
    seg = segment_run(fd)
    load, store = seg.segment.accesses[:2]
    assert _repeatable(seg.segment, {id(load.tv): x, id(store.tv): out})
    assert not _repeatable(seg.segment, {id(load.tv): x, id(store.tv): x.t()})
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.mul(t, fd.define_scalar(2.0)), alias_input=t)
    configured(fd, tuning=ON_CPU)
    y = x.clone()
    fd.execute([y])
    torch.testing.assert_close(y, x * 2)
    (seg,) = fd.executor().last_run.segments
    env = {id(a.tv): y for a in seg.segment.accesses}
    assert not _repeatable(seg.segment, env)
    FusionCache.reset()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="times a CUDA device")
def test_the_device_clock_counts_the_device_not_the_host():
    """A run that waits 2 ms on the host before launching a small kernel: the host's clock
    counts the wait, the device clock only the kernel (the flush and spin ahead of the
    start event keep the device busy while the host launches); a read of 8x the L2
    takes the device clock about the time its bytes take at the device's bandwidth."""
    import time

    from layoutfuse.schedulers.measure import MeasureTuning

    info = device_info(torch.device("cuda"))
    tuning = MeasureTuning(spin_cycles=20_000_000)  # some 10 ms: outlasts the host's 2
    clock = measure.DeviceClock(torch.device("cuda"), info.l2_bytes, tuning)
    x = torch.zeros(1024, device="cuda")

    def late_add():
        time.sleep(0.002)
        x.add_(1.0)

    wall = measure.WallClock(torch.cuda.synchronize)
    assert wall.time(late_add) >= 2.0
    assert clock.time(late_add) < 1.0
    big = torch.ones(8 * info.l2_bytes // 4, device="cuda")
    read_ms = measure.time_runs(lambda: big.sum(), clock, tuning)
    gbps = big.numel() * 4 / read_ms / 1e6
    assert 500 < gbps < 10_000, gbps
    assert float(x[0]) == 2.0  # both runs ran


@pytest.mark.skipif(not torch.cuda.is_available(), reason="captures a CUDA graph")
@pytest.mark.parametrize("warm", [True, False], ids=["warmed", "first_call_in_capture"])
def test_a_cuda_graph_captures_the_call(warm):
    """A call captured in a CUDA graph, after a warm-up on a side stream (the measured
    choice times there) or as the problem's first call (nothing is timed while
    capturing: the rule's plan): the graph's replays copy new values through it."""
    tuning = DEFAULT.with_fields(measure=dict(min_l2=0.0))
    x = torch.randn(1024, 768, device="cuda")
    fd = transpose(x, tuning)
    if warm:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fd.execute([x])
        torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        (out,) = fd.execute([x])
    x.copy_(torch.randn(1024, 768, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    assert out.stride() == (1, 1024)


def test_no_room_for_the_flush_buffer_times_without_it(monkeypatch):
    """A device without room for the L2 flush's buffer: the clock goes without it, the
    call does not fail (the buffer is made with ``torch.zeros``)."""

    def full(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory")

    assert measure.flush_buffer(torch.device("cpu"), 0) is None
    assert measure.flush_buffer(torch.device("cpu"), 64).numel() == 16
    monkeypatch.setattr(measure.torch, "zeros", full)
    assert measure.flush_buffer(torch.device("cpu"), 1 << 20) is None
