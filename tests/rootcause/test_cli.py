import gzip
import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import rootcause.cli
from rootcause.engine import Engine
from tests.rootcause.fixture_catalogue import entries

LOG = (
    "[rank0]: step 1 loss 2.0\n"
    "[rank1]: RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 4x2)\n"
    "[rank0]: RuntimeError: gloo/transport: Connection closed by peer\n"
    "contact alice@example.com\n"
)
# Every letter is a byte that is not UTF-8: the file is mostly undecodable.
RUSSIAN_CP1251 = "Ошибка: недостаточно памяти на устройстве\n".encode("cp1251") * 40


@pytest.fixture
def runner(monkeypatch):
    engine = Engine(entries())
    monkeypatch.setattr(rootcause.cli, "get_engine", lambda: engine)
    return CliRunner()


def invoke(runner, *args, **kwargs):
    return runner.invoke(rootcause.cli.app, list(args), **kwargs)


def test_without_offline_a_service_is_required(runner, tmp_path):
    log = tmp_path / "a.log"
    log.write_text(LOG)
    result = invoke(
        runner, "diagnose", str(log), env={"ROOTCAUSE_URL": None, "ROOTCAUSE_TOKEN": None}
    )
    assert result.exit_code == 2
    assert "ROOTCAUSE_URL" in result.output
    assert "--offline" in result.output


def test_human_output(runner, tmp_path):
    log = tmp_path / "a.log"
    log.write_text(LOG)
    result = invoke(runner, "diagnose", str(log), "--offline")
    assert result.exit_code == 1, result.output  # a failure was diagnosed
    assert "class:      shape-mismatch" in result.output
    assert "initiating rank: 1" in result.output
    assert "collateral: peer-closed on ranks 0" in result.output
    assert "verify: verify-shape-mismatch" in result.output


def test_json_lines_one_per_file_with_gz_and_stdin(runner, tmp_path):
    plain = tmp_path / "a.log"
    plain.write_text(LOG)
    packed = tmp_path / "b.log.gz"
    packed.write_bytes(gzip.compress(b"epoch 1 step 3 loss 0.1\n"))
    result = invoke(
        runner, "diagnose", str(plain), str(packed), "-", "--offline", "--json", input=LOG
    )
    assert result.exit_code == 1, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["file"] for r in rows] == [str(plain), str(packed), "-"]
    assert rows[0]["failure"]["slug"] == "shape-mismatch"
    assert rows[1]["outcome"] == "no_match"
    assert rows[2]["initiating_rank"] == 1
    # the engine read the log as it is; what is printed is masked, and counted
    assert "alice@example.com" not in result.output
    assert rows[0]["masking"] == {}  # nothing of the printed text needed it


def test_offline_prints_the_log_masked_with_names_learned_anywhere_in_it(runner, tmp_path):
    """Offline the engine reads the raw log; the evidence is masked as the whole log's masking
    would mask it: a host named on a later line by an NCCL prefix, and a user's dotted name in
    a home path, masked where the evidence mentions them bare (the user's in the dashed form
    of a pod's name)."""
    log = tmp_path / "a.log"
    log.write_text(
        "[rank1]: RuntimeError: mat1 and mat2 shapes cannot be multiplied on gpu-node-17 "
        "(pod trainjob-declan-murphy-worker-1, key AKIAIOSFODNN7EXAMPLE)\n"
        "[rank0]: RuntimeError: gloo/transport: Connection closed by peer\n"
        "gpu-node-17:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.1.2.3<0>\n"
        "reading /home/declan.murphy/data/train.jsonl\n"
    )
    result = invoke(runner, "diagnose", str(log), "--offline", "--json")
    assert result.exit_code == 1, result.output
    row = json.loads(result.stdout)
    evidence = " ".join(line["text"] for line in row["evidence"])
    assert "shapes cannot be multiplied" in evidence
    for value in ("gpu-node-17", "declan", "AKIAIOSFODNN7EXAMPLE"):
        assert value not in result.output
    assert "<HOST_1>" in evidence
    assert "trainjob-<USER>-worker-1" in evidence
    assert row["masking"]["HOSTNAME"] >= 1


def test_merge_treats_files_as_ranks_of_one_job(runner, tmp_path):
    a = tmp_path / "rank0.log"
    a.write_text("[rank0]: RuntimeError: gloo/transport: Connection closed by peer\n")
    b = tmp_path / "rank1.log"
    b.write_text("[rank1]: RuntimeError: mat1 and mat2 shapes cannot be multiplied\n")
    result = invoke(runner, "diagnose", str(a), str(b), "--offline", "--json", "--merge")
    assert result.exit_code == 1, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 1
    assert rows[0]["failure"]["slug"] == "shape-mismatch"
    assert rows[0]["initiating_rank"] == 1


def test_empty_file_is_no_match_with_a_missing_fact(runner, tmp_path):
    log = tmp_path / "empty.log"
    log.write_text("")
    result = invoke(runner, "diagnose", str(log), "--offline", "--json")
    assert result.exit_code == 0, result.output
    row = json.loads(result.output)
    assert row["outcome"] == "no_match"
    assert "empty" in row["missing_facts"][0]


def test_bad_inputs_fail_clearly_and_the_rest_still_runs(runner, tmp_path):
    good = tmp_path / "good.log"
    good.write_text(LOG)
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x00\x01\x02" * 1000)
    broken = tmp_path / "broken.gz"
    broken.write_bytes(b"not gzip at all")
    # A directory is one job's bundle since issue 30 (test_hangs_verdicts); an empty one is still
    # refused as a directory.
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke(
        runner,
        "diagnose",
        str(tmp_path / "missing.log"),
        str(binary),
        str(broken),
        str(empty),
        str(good),
        "--offline",
        "--json",
    )
    assert result.exit_code == 2  # an unreadable file is a usage error, whatever else was found
    assert "missing.log: no such file" in result.output
    assert "model.bin: looks like a binary file" in result.output
    assert "broken.gz: cannot be read" in result.output
    assert "is a directory" in result.output
    assert '"slug": "shape-mismatch"' in result.output


def test_a_few_bad_bytes_are_a_log_and_a_mostly_undecodable_file_is_not(runner, tmp_path):
    latin1 = tmp_path / "latin1.log"
    latin1.write_bytes(b"Schl\xfcssel caf\xe9\n" + LOG.encode())
    cp1251 = tmp_path / "cp1251.log"
    cp1251.write_bytes(RUSSIAN_CP1251)

    result = invoke(runner, "diagnose", str(latin1), str(cp1251), "--offline", "--json")

    assert result.exit_code == 2
    assert "cp1251.log: is not UTF-8 text" in result.output
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert [r["file"] for r in rows] == [str(latin1)]
    assert rows[0]["failure"]["slug"] == "shape-mismatch"


def test_the_online_mode_refuses_the_same_files_before_sending_them(tmp_path):
    cp1251 = tmp_path / "cp1251.log"
    cp1251.write_bytes(RUSSIAN_CP1251)

    result = CliRunner().invoke(
        rootcause.cli.app,
        ["diagnose", str(cp1251)],
        env={"ROOTCAUSE_URL": "http://127.0.0.1:1", "ROOTCAUSE_TOKEN": "rc_x"},
    )

    assert result.exit_code == 2
    assert "cp1251.log: is not UTF-8 text" in result.output
    assert "cannot reach" not in result.output


def test_mask_prints_masked_text(runner, tmp_path):
    log = tmp_path / "a.log"
    log.write_text(LOG)
    result = invoke(runner, "mask", str(log))
    assert result.exit_code == 0, result.output
    assert "alice@example.com" not in result.output
    assert "mat1 and mat2 shapes cannot be multiplied" in result.output
    assert result.output.count("\n") == LOG.count("\n")


@pytest.mark.parametrize("missing", [False, True])
def test_mask_from_main_is_the_command_without_typers_parsing(
    runner, tmp_path, capsys, monkeypatch, missing
):
    # main() runs `mask FILE...` itself (Typer's parsing imports pydantic): the same output,
    # errors and exit codes as the command
    log = tmp_path / "a.log"
    log.write_text(LOG)
    files = [str(log), str(tmp_path / "missing.log")] if missing else [str(log)]
    typer_result = invoke(runner, "mask", *files)
    monkeypatch.setattr("sys.argv", ["rootcause", "mask", *files])
    with pytest.raises(SystemExit) as exit_info:
        rootcause.cli.main()
    out = capsys.readouterr()
    assert exit_info.value.code == typer_result.exit_code == (2 if missing else 0)
    assert (out.out, out.err) == (typer_result.stdout, typer_result.stderr)
    assert "alice@example.com" not in out.out
    assert "mat1 and mat2" in out.out


def test_mask_from_main_does_not_import_pydantic():
    script = (
        "import sys\nfrom rootcause.cli import main\nsys.argv = ['rootcause', 'mask', '-']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "print('pydantic' in sys.modules, code)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], input="x 10.1.2.3\n", capture_output=True, text=True
    )
    assert out.stdout.splitlines()[-1] == "False 0", out.stderr[-2000:]


def test_mask_options_still_go_through_typer(runner, monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["rootcause", "mask", "--help"])
    with pytest.raises(SystemExit) as exit_info:
        rootcause.cli.main()
    assert exit_info.value.code == 0
    assert "masked text" in capsys.readouterr().out


def test_main_uses_the_shipped_catalogue(tmp_path, capsys, monkeypatch):
    log = tmp_path / "oom.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)\n"
    )
    monkeypatch.setattr("sys.argv", ["rootcause", "diagnose", "--offline", "--json", str(log)])
    with pytest.raises(SystemExit) as exit_info:
        rootcause.cli.main()
    assert exit_info.value.code == 1
    row = json.loads(capsys.readouterr().out)
    assert row["failure"]["slug"] == "shape-mismatch"


def test_the_exit_codes_are_one_table_in_help_the_readme_and_the_ci_docs():
    from pathlib import Path

    from rootcause.cli.errors import EXIT_CODES

    root = Path(__file__).resolve().parents[2]
    table = [line.strip() for line in EXIT_CODES.splitlines()]
    for doc in ("README.md", "docs/ci.md"):
        lines = [line.strip() for line in (root / doc).read_text().splitlines()]
        start = lines.index(table[0])
        assert lines[start : start + len(table)] == table, doc
    help_text = (
        CliRunner().invoke(rootcause.cli.app, ["diagnose", "--help"], env={"COLUMNS": "200"}).output
    )
    for code in range(5):
        assert f"  {code}  " in help_text
    assert "the daily diagnosis allowance is used up (429)" in help_text
