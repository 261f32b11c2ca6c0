"""The kernel cache on disk (codegen/kernel_cache.py) cannot make layoutfuse run wrong code.

Every test loads a source of its own (``_source``): ``load_kernel`` keeps what it loaded for
the whole process, so only a source seen for the first time reads its entry. Tests run as
root here, which writes through any mode bits: a read-only directory is simulated (``os.access``,
a failing ``mkstemp``), and the real one is tested only when not root.
"""

import os
import shutil
import stat
import uuid
import warnings

import pytest
import torch

from layoutfuse.codegen import kernel_cache
from layoutfuse.codegen.backend import load_kernel
from layoutfuse.codegen.kernel_cache import cache_entry, cache_key
from layoutfuse.errors import KernelCacheError, KernelCacheWarning, LayoutfuseError

KERNEL = """import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    result = tl.load(x_ptr + offsets, mask=mask) {op} tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, result, mask=mask)
"""


def _source(op: str = "+") -> str:
    """A kernel no other test loads (the comment is part of the key); the store is its last
    line."""
    return f"# {uuid.uuid4().hex}\n" + KERNEL.format(op=op)


def _entry_path(directory, source: str):
    return directory / f"kernel_{cache_key(source)[:24]}.py"


def _plant(path, data: bytes, mode: int = 0o600) -> None:
    path.write_bytes(data)
    path.chmod(mode)


def _check_runs_right(kernel) -> None:
    """The loaded kernel adds, on the CPU interpreter."""
    x, y = torch.arange(300, dtype=torch.float32), torch.full((300,), 0.5)
    out = torch.zeros(300)
    kernel.for_device("cpu")[(3,)](x, y, out, 300, BLOCK=128)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    directory = tmp_path / "kernels"
    monkeypatch.setenv("LAYOUTFUSE_CACHE_DIR", str(directory))
    return directory


def _load_quietly(source):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = load_kernel(source, "add_kernel")
    return kernel, [w for w in caught if issubclass(w.category, KernelCacheWarning)]


# --- a fresh entry ------------------------------------------------------------------------


def test_a_new_entry_is_private_atomic_and_carries_its_digests(cache_dir):
    source = _source()
    kernel, caught = _load_quietly(source)
    assert caught == []
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(kernel.path.stat().st_mode) == 0o600
    assert kernel.path == _entry_path(cache_dir, source)
    assert kernel.path.read_bytes() == cache_entry(source)
    header = kernel.path.read_text().split("\n", 1)[0]
    assert cache_key(source) in header and kernel_cache.CACHE_FORMAT in header
    assert [p.name for p in cache_dir.iterdir()] == [kernel.path.name]  # no temporary left
    _check_runs_right(kernel)


def test_the_key_depends_on_the_generator_version(monkeypatch):
    source = _source()
    key = cache_key(source)
    monkeypatch.setattr(kernel_cache, "CACHE_FORMAT", "layoutfuse-kernel-test")
    assert cache_key(source) != key


def test_a_cache_directory_removed_meanwhile_is_made_again(cache_dir):
    _load_quietly(_source())
    shutil.rmtree(cache_dir)
    kernel, caught = _load_quietly(_source())
    assert caught == [] and kernel.path.parent == cache_dir
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    _check_runs_right(kernel)


# --- damaged and foreign entries are regenerated, with a warning naming the file ----------


def _truncated(source):
    """Valid Python still: the store, the kernel's last line, is gone."""
    data = cache_entry(source)
    return data[: data.rstrip(b"\n").rfind(b"\n") + 1]


def _foreign(source):
    """Another fusion's entry, same kernel name (subtracts), copied under this name."""
    return cache_entry(_source("-"))


def _forged(source):
    """This key in the header, another kernel's body with its own correct content digest."""
    other = _source("*")
    head, body = cache_entry(other).split(b"\n", 1)
    return head.replace(cache_key(other).encode(), cache_key(source).encode()) + b"\n" + body


DAMAGE = {
    "truncated": (_truncated, "truncated or modified"),
    "foreign": (_foreign, "another kernel"),
    "forged": (_forged, "another kernel"),
    "empty": (lambda source: b"", "is empty"),
    "garbled": (lambda source: b"\xff\xfe\x00garbage(\n" * 7, "garbled"),
    "no header": (lambda source: source.encode(), "garbled"),
}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_a_bad_entry_is_regenerated_with_a_warning(cache_dir, damage):
    make, reason = DAMAGE[damage]
    source = _source()
    cache_dir.mkdir(mode=0o700)
    path = _entry_path(cache_dir, source)
    _plant(path, make(source))
    if damage == "truncated":
        compile(path.read_bytes(), str(path), "exec")  # still valid Python
        assert b"tl.store" not in path.read_bytes()
    kernel, caught = _load_quietly(source)
    assert len(caught) == 1
    assert str(path) in str(caught[0].message) and reason in str(caught[0].message)
    assert path.read_bytes() == cache_entry(source)
    _check_runs_right(kernel)


def test_code_planted_in_an_entry_is_never_executed(cache_dir):
    source = _source()
    marker = cache_dir.parent / "planted-ran"
    cache_dir.mkdir(mode=0o700)
    planted = f"open({str(marker)!r}, 'w').close()\n".encode() + source.encode()
    _plant(_entry_path(cache_dir, source), planted)
    kernel, caught = _load_quietly(source)
    assert len(caught) == 1 and not marker.exists()
    _check_runs_right(kernel)


def test_a_symlinked_entry_is_replaced_not_followed(cache_dir):
    source = _source()
    cache_dir.mkdir(mode=0o700)
    target = cache_dir.parent / "elsewhere.py"
    target.write_bytes(cache_entry(source))
    _entry_path(cache_dir, source).symlink_to(target)
    kernel, caught = _load_quietly(source)
    assert len(caught) == 1
    assert not kernel.path.is_symlink() and kernel.path.read_bytes() == cache_entry(source)
    _check_runs_right(kernel)


# --- an unwritable cache falls back to a private temporary directory, warning once --------


def _check_fell_back(configured, source, caught) -> None:
    kernel = load_kernel(source, "add_kernel")
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "LAYOUTFUSE_CACHE_DIR" in message and str(configured) in message
    assert kernel.path.parent != configured and str(kernel.path.parent) in message
    assert stat.S_IMODE(kernel.path.parent.stat().st_mode) == 0o700
    _check_runs_right(kernel)
    again, more = _load_quietly(_source())  # the next kernel: no second warning
    assert more == [] and again.path.parent == kernel.path.parent


def test_a_cache_path_that_is_a_file_falls_back(tmp_path, monkeypatch):
    configured = tmp_path / "not-a-directory"
    configured.write_text("")
    monkeypatch.setenv("LAYOUTFUSE_CACHE_DIR", str(configured))
    source = _source()
    _, caught = _load_quietly(source)
    _check_fell_back(configured, source, caught)


def test_a_cache_path_under_a_file_falls_back(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    configured = tmp_path / "file" / "kernels"
    monkeypatch.setenv("LAYOUTFUSE_CACHE_DIR", str(configured))
    source = _source()
    _, caught = _load_quietly(source)
    _check_fell_back(configured, source, caught)


def test_a_directory_without_write_permission_falls_back(cache_dir, monkeypatch):
    """Simulated: as root, ``os.access`` is what tells (the mode bits do not stop root)."""
    cache_dir.mkdir(mode=0o700)
    real_access = os.access
    monkeypatch.setattr(
        kernel_cache.os,
        "access",
        lambda p, mode: False if str(p) == str(cache_dir) else real_access(p, mode),
    )
    source = _source()
    _, caught = _load_quietly(source)
    _check_fell_back(cache_dir, source, caught)


def test_a_failing_write_falls_back(cache_dir, monkeypatch):
    """A read-only file system (EROFS) or a full disk: the write itself fails."""
    cache_dir.mkdir(mode=0o700)
    real_mkstemp = kernel_cache.tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if str(dir) == str(cache_dir):
            raise OSError(30, "Read-only file system")
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(kernel_cache.tempfile, "mkstemp", mkstemp)
    source = _source()
    _, caught = _load_quietly(source)
    _check_fell_back(cache_dir, source, caught)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_directory_falls_back(cache_dir):
    cache_dir.mkdir(mode=0o500)
    source = _source()
    _, caught = _load_quietly(source)
    _check_fell_back(cache_dir, source, caught)


# --- a cache others may write is refused --------------------------------------------------


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777], ids=oct)
def test_a_directory_others_may_write_is_refused(cache_dir, mode):
    cache_dir.mkdir()
    cache_dir.chmod(mode)
    with pytest.raises(KernelCacheError) as error:
        load_kernel(_source(), "add_kernel")
    assert isinstance(error.value, LayoutfuseError)
    assert str(cache_dir) in str(error.value) and "LAYOUTFUSE_CACHE_DIR" in str(error.value)
    assert f"{mode:#o}" in str(error.value)


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666], ids=oct)
def test_an_entry_others_may_write_is_refused_unrun(cache_dir, mode):
    source = _source()
    marker = cache_dir.parent / "planted-ran"
    cache_dir.mkdir(mode=0o700)
    path = _entry_path(cache_dir, source)
    _plant(path, f"open({str(marker)!r}, 'w').close()\n".encode(), mode)
    with pytest.raises(KernelCacheError) as error:
        load_kernel(source, "add_kernel")
    assert str(path) in str(error.value) and "LAYOUTFUSE_CACHE_DIR" in str(error.value)
    assert not marker.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file away")
def test_an_entry_another_user_owns_is_refused(cache_dir):
    source = _source()
    cache_dir.mkdir(mode=0o700)
    path = _entry_path(cache_dir, source)
    _plant(path, cache_entry(source))
    os.chown(path, 12345, 12345)
    with pytest.raises(KernelCacheError, match="another user"):
        load_kernel(source, "add_kernel")
