"""The parsers on real artefacts captured from gloo jobs (tests/rootcause/hang_bundles, made by
bench/hangruns/generate.py with torch 2.13.0 CPU): flight-recorder JSON and pickle, py-spy text
and JSON, faulthandler dumps in a log."""

from pathlib import Path
from typing import Any

from rootcause.hangs import members, read_bundle, stacks
from rootcause.hangs.parsers import faulthandler_threads, rank_from_name

BUNDLES = Path(__file__).parent / "hang_bundles"


def _bundle(name):
    return read_bundle(BUNDLES / name)


def test_flight_recorder_json_entries_and_status():
    bundle = _bundle("lock__0.tar.gz")
    frs = {f.rank: f.fr for f in bundle.files if f.kind == "fr"}
    assert sorted(frs) == [0, 1, 2, 3]
    # the culprit (rank 3) is one collective behind, completed; the others wait, pending
    last = {r: fr.entries[-1] for r, fr in frs.items()}
    assert {last[r].seq for r in (0, 1, 2)} == {last[3].seq + 1}
    assert not any(last[r].completed for r in (0, 1, 2))
    assert last[3].completed
    assert last[0].op == "all_reduce"
    assert last[0].dtypes == ["Float"]
    assert list(frs[0].pg_ranks.values()) == [[0, 1, 2, 3]]


def test_flight_recorder_pickle_has_stack_frames():
    bundle = _bundle("dataloader-worker__0.tar.gz")
    frs = [f.fr for f in bundle.files if f.kind == "fr"]
    assert frs
    assert all(fr.entries for fr in frs)
    frames = frs[0].entries[-1].frames
    # this job used DDP: the gradient all-reduce is issued from backward
    assert frames[0].func == "_engine_run_backward"
    assert any(fr.func == "train" and fr.file.endswith("program.py") for fr in frames)


def test_pyspy_text_and_json_give_the_same_main_stack():
    bundle = _bundle("dataloader-worker__0.tar.gz")
    by_kind: dict[int | None, list[Any]] = {}
    for f in bundle.files:
        if f.kind == "pyspy":
            by_kind.setdefault(f.rank, []).append(f)
    both = next(fs for fs in by_kind.values() if len(fs) == 2)
    mains = [stacks.main_thread(f.threads) for f in both]
    assert mains[0] is not None
    assert mains[1] is not None
    assert [fr.func.rsplit(".", 1)[-1] for fr in mains[0].frames] == [
        fr.func.rsplit(".", 1)[-1] for fr in mains[1].frames
    ]
    assert both[0].pid == both[1].pid


def test_faulthandler_dump_inside_a_log():
    bundle = _bundle("sleep__0.tar.gz")
    logs = [f for f in bundle.files if f.kind == "log" and f.threads]
    assert logs
    main = stacks.main_thread(logs[0].threads)
    assert main is not None
    assert main.frames[-1].func == "<module>"


def test_faulthandler_text_parses_threads_innermost_first():
    text = (
        "Thread 0x00007f1 (most recent call first):\n"
        '  File "/usr/lib/python3.11/threading.py", line 320 in wait\n'
        '  File "/app/worker.py", line 10 in run\n'
        "\n"
        "Current thread 0x00007f0 (most recent call first):\n"
        '  File "/app/data.py", line 41 in __next__\n'
        '  File "/app/train.py", line 88 in main\n'
        '  File "/app/train.py", line 99 in <module>\n'
    )
    threads = faulthandler_threads(text)
    assert len(threads) == 2
    main = stacks.main_thread(threads)
    assert main is not None
    assert main.frames[0].func == "__next__"
    assert main.frames[0].line == 41


def test_rank_from_names():
    assert rank_from_name("nccl_trace_rank_12") == 12
    assert rank_from_name("logs/rank3.log") == 3
    assert rank_from_name("pyspy-7.txt") == 7
    assert rank_from_name("launcher.log") is None


def test_a_pyspy_dump_without_a_rank_in_its_name_is_tied_by_pid_to_the_launchers_rank():
    files = dict(members((BUNDLES / "lock__0.tar.gz").read_bytes()))
    renamed = [(("stack-dump-a.txt" if n == "pyspy_rank3.txt" else n), d) for n, d in files.items()]
    bundle = read_bundle(renamed)
    from rootcause.hangs.analysis import gather

    ev = gather(bundle)
    assert ev.ranks[3].stack_source == "py-spy"


def test_stack_meanings_of_real_culprits():
    cases = {
        "lock__0.tar.gz": (3, "lock"),
        "input__0.tar.gz": (3, "input"),
        "sleep__0.tar.gz": (3, "sleep"),
        "dataloader-worker__0.tar.gz": (1, "data"),
    }
    from rootcause.hangs.analysis import gather

    for name, (rank, meaning) in cases.items():
        ev = gather(_bundle(name))
        reading = stacks.read_stack(ev.ranks[rank].threads)
        assert reading is not None, name
        assert reading.meaning == meaning, (name, reading)


def test_rank_ranges():
    assert stacks.rank_ranges([0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15]) == "0-6, 8-15"
    assert stacks.rank_ranges([7]) == "7"
    assert stacks.rank_ranges([]) == ""


def test_no_bundle_names_its_label_outside_the_evidence():
    """The generator's own notes (which rank it froze) are no evidence: a launcher.log that
    named the frozen rank handed the analyser its label. Every shipped bundle is checked."""
    import re
    import tarfile

    root = Path(__file__).resolve().parents[2]
    bundles = [
        *(root / "bench" / "hangruns" / "corpus").glob("*/*.tar.gz"),
        *(Path(__file__).parent / "hang_bundles").glob("*.tar.gz"),
    ]
    assert bundles
    leak = re.compile(rb"(?im)^rank \d+ (frozen|stopped|culprit|faulty)|SIGSTOP")
    for path in bundles:
        with tarfile.open(path) as tar:
            for member in tar.getmembers():
                if member.name.endswith("launcher.log"):
                    data = tar.extractfile(member).read()  # type: ignore[union-attr]
                    assert not leak.search(data), f"{path.name}: {member.name} names its label"


def test_no_frozen_rank_gave_a_flight_recorder_dump():
    """A process stopped with SIGSTOP runs no code: it cannot answer the collector's dump request.
    Until 2026-12-07 the generator sent SIGCONT before its final SIGKILL and left the request in
    place, and a frozen rank's dump thread sometimes woke and wrote a dump between the two. Every
    shipped freeze bundle is checked (its label's culprit is the frozen rank)."""
    import json
    import tarfile

    corpus = Path(__file__).resolve().parents[2] / "bench" / "hangruns" / "corpus"
    checked = 0
    for labels in corpus.glob("*/labels.jsonl"):
        for row in map(json.loads, labels.read_text().splitlines()):
            if row["fault"] != "freeze":
                continue
            frozen = row["culprits"][0]
            dumps = {f"fr_trace_rank{frozen}.json", f"nccl_trace_rank_{frozen}"}
            with tarfile.open(labels.parent / f"{row['name']}.tar.gz") as tar:
                assert not dumps & set(tar.getnames()), f"{row['name']}: the frozen rank's dump"
            checked += 1
    assert checked >= 10
