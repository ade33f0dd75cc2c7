"""The bundle reader: archives and directories within limits, hostile archives, the restricted
pickle reader, recognition by content, masking before anything reads a file."""

import gzip
import io
import json
import os
import pickle
import tarfile
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from rootcause.hangs import (
    BundleError,
    BundleTooLarge,
    Limits,
    PickleRefused,
    members,
    read_bundle,
    safepickle,
)

BUNDLES = Path(__file__).parent / "hang_bundles"


def _tar_gz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _members(name: str) -> dict[str, bytes]:
    return dict(members((BUNDLES / name).read_bytes()))


# --- the restricted pickle reader -------------------------------------------------------------


def test_a_real_flight_recorder_pickle_reads_as_pickle_would():
    files = _members("dataloader-worker__0.tar.gz")
    dump = next(d for n, d in files.items() if n.startswith("nccl_trace_rank_"))
    # pickle.loads here only checks our reader against the reference, on our own fixture
    assert safepickle.loads(dump) == pickle.loads(dump)  # noqa: S301 - our own fixture


class Planted:
    def __reduce__(self):
        return (os.system, ("echo planted > /tmp/rootcause-planted",))


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_a_pickle_that_calls_a_function_is_refused(protocol):
    data = pickle.dumps({"entries": [Planted()], "version": "2.10"}, protocol=protocol)
    with pytest.raises(PickleRefused, match="refused"):
        safepickle.loads(data)
    assert not Path("/tmp/rootcause-planted").exists()


@pytest.mark.parametrize("value", [{1, 2}, frozenset([1]), bytearray(b"x"), complex(1, 2)])
def test_a_pickle_of_anything_but_plain_data_is_refused(value):
    with pytest.raises(PickleRefused):
        safepickle.loads(pickle.dumps(value, protocol=2))


def test_plain_data_of_every_allowed_type_reads_back():
    value = {"a": [1, -2, 3.5, True, False, None, "é", (1, ("x",))], 2**70: {}}
    for protocol in range(0, 6):
        assert safepickle.loads(pickle.dumps(value, protocol=protocol)) == value
    # bytes have opcodes of their own from protocol 3; before, pickle builds them by calling
    # _codecs.encode, which is refused like any other call
    assert safepickle.loads(pickle.dumps([b"\x00\xff"], protocol=3)) == [b"\x00\xff"]
    with pytest.raises(PickleRefused):
        safepickle.loads(pickle.dumps([b"\x00\xff"], protocol=2))


def test_a_planted_pickle_in_a_bundle_is_refused_with_the_file_named():
    bad = pickle.dumps({"entries": [Planted()]}, protocol=2)
    with pytest.raises(PickleRefused, match="nccl_trace_rank_3"):
        read_bundle([("nccl_trace_rank_3", bad)])


def test_truncated_pickles_are_refused_not_crashing():
    data = pickle.dumps({"entries": [1, 2, 3]}, protocol=2)
    for cut in (3, len(data) // 2, len(data) - 1):
        with pytest.raises(PickleRefused):
            safepickle.loads(data[:cut])


# --- limits and hostile archives --------------------------------------------------------------


def _zeros_tar_gz(size: int) -> bytes:
    """A tar.gz holding one file of `size` zero bytes, built without holding it in memory."""
    header = tarfile.TarInfo("zeros.log")
    header.size = size
    out = io.BytesIO()
    gz = gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9)
    gz.write(header.tobuf(format=tarfile.GNU_FORMAT))
    block = bytes(1 << 20)
    for _ in range(size // len(block)):
        gz.write(block)
    gz.write(bytes(tarfile.BLOCKSIZE * 2))
    gz.close()
    return out.getvalue()


@pytest.mark.heavy  # builds the archive
def test_a_one_gigabyte_expansion_of_a_one_megabyte_archive_is_refused_before_expanding():
    bomb = _zeros_tar_gz(1 << 30)
    assert len(bomb) < 1_100_000
    start = time.process_time()
    with pytest.raises(BundleTooLarge, match="refused before expanding"):
        read_bundle(bomb)
    # refused from the gzip trailer: far less CPU than inflating a gigabyte would take
    assert time.process_time() - start < 0.5


def test_a_gzip_that_lies_about_its_size_is_stopped_while_expanding():
    bomb = bytearray(_zeros_tar_gz(64 << 20))
    bomb[-4:] = (1000).to_bytes(4, "little")  # a forged ISIZE
    with pytest.raises(BundleTooLarge):
        read_bundle(bytes(bomb), limits=Limits(max_total_bytes=8 << 20))


def test_a_zip_bomb_is_refused_from_its_central_directory():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("rank0.log", bytes(64 << 20))
    with pytest.raises(BundleTooLarge, match="refused before expanding"):
        read_bundle(buf.getvalue())


def test_a_zip_member_larger_than_it_declares_is_refused():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("rank0.log", b"x" * 1000)
    data = bytearray(buf.getvalue())
    # shrink the declared size in the central directory: the member is then longer than said
    cd = data.rindex(b"PK\x01\x02")
    data[cd + 24 : cd + 28] = (10).to_bytes(4, "little")
    with pytest.raises(BundleError):
        read_bundle(bytes(data))


def test_file_count_and_per_file_limits(tmp_path):
    for i in range(5):
        (tmp_path / f"rank{i}.log").write_text("step 1\n")
    with pytest.raises(BundleTooLarge, match="more than 3 files"):
        read_bundle(tmp_path, limits=Limits(max_files=3))
    (tmp_path / "rank0.log").write_bytes(b"x" * 5000)
    with pytest.raises(BundleTooLarge, match="over the limit"):
        read_bundle(tmp_path, limits=Limits(max_file_bytes=4096))


def test_the_errors_carry_the_http_status_the_api_maps():
    assert BundleError("x").status == 400
    assert BundleTooLarge("x").status == 413
    assert PickleRefused("x").status == 400


def test_member_paths_are_names_only_and_links_are_skipped(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("../../escape.log")
        data = b"[rank0]: step 1\n"
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("rank1.log")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        bundle = read_bundle(buf.getvalue())
    finally:
        os.chdir(cwd)
    assert [f.name for f in bundle.files] == ["../../escape.log"]
    assert not (tmp_path.parent.parent / "escape.log").exists()


@pytest.mark.parametrize("data", [b"plain text, not an archive", b"\x1f\x8bnot gzip at all", b""])
def test_what_is_not_an_archive_is_a_clear_400(data):
    with pytest.raises(BundleError):
        read_bundle(data)


def test_a_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(BundleError, match="no such file"):
        read_bundle(tmp_path / "nope.tar.gz")


# --- recognition by content and masking -------------------------------------------------------


def test_files_are_recognised_by_content_not_name():
    files = _members("dataloader-worker__0.tar.gz")
    renamed = [(f"blob-{i}.dat", data) for i, data in enumerate(files.values())]
    kinds_named = sorted(f.kind for f in read_bundle(list(files.items())).files)
    kinds_renamed = sorted(f.kind for f in read_bundle(renamed).files)
    assert kinds_named == kinds_renamed
    assert {"fr", "pyspy", "log"} <= set(kinds_renamed)


def test_the_same_bundle_reads_alike_from_a_directory_a_tar_gz_and_a_zip(tmp_path):
    files = _members("lock__0.tar.gz")
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    shapes = []
    for source in (tmp_path, _tar_gz(files), zbuf.getvalue(), list(files.items())):
        shapes.append(sorted((f.name, f.kind, f.rank) for f in read_bundle(source).files))
    assert shapes[0] == shapes[1] == shapes[2] == shapes[3]


def test_every_file_is_masked_before_the_analyser_reads_it():
    fr = {
        "version": "2.10",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
        "pg_status": {"0": {"last_completed_collective": "1", "last_enqueued_collective": "2"}},
        "entries": [
            {"collective_seq_id": 2, "pg_id": 0, "profiling_name": "gloo:all_reduce",
             "input_sizes": [[4]], "input_dtypes": ["Float"], "time_created_ns": 1,
             "frames": [{"name": "train", "filename": "/home/alice/proj/train.py", "line": 8}]},
        ],
    }  # fmt: skip
    log = b"[rank1]: token hf_abcdefghijklmnopqrstuvwxyzABCDEFGH for alice@example.com\n"
    bundle = read_bundle([("fr_rank1.json", json.dumps(fr).encode()), ("rank1.log", log)])
    text = repr([(f.fr, f.log) for f in bundle.files])
    assert "alice@example.com" not in text
    assert "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH" not in text
    assert "/home/alice" not in text
    assert bundle.masked


def test_unrecognised_files_are_listed_as_skipped():
    bundle = read_bundle([("core.bin", b"\x00\x01\x02" * 100), ("rank0.log", b"step 1\n")])
    assert [f.name for f in bundle.files] == ["rank0.log"]
    assert bundle.skipped
    assert "core.bin" in bundle.skipped[0]


def test_zlib_is_the_deflate_the_zip_uses():
    # guards _zeros_tar_gz's assumption that zero blocks compress about 1000:1
    assert len(zlib.compress(bytes(1 << 20), 9)) < 2000
