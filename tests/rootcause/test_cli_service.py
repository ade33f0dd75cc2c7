"""`rootcause diagnose` against a service: uploads, waiting, and the exit code of each outcome.

The service is tests/rootcause/fake_service.py, a stdlib HTTP server that answers like the API.
"""

import gzip
import json
import socket

import pytest
from typer.testing import CliRunner

import rootcause.cli
from rootcause.cli import client, inputs
from rootcause.engine import Engine
from tests.rootcause.fake_service import Answer, FakeService, problem
from tests.rootcause.fixture_catalogue import entries

LOG = (
    "[rank0]: step 1 loss 2.0\n"
    "[rank1]: RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 4x2)\n"
    "[rank0]: RuntimeError: gloo/transport: Connection closed by peer\n"
    "contact alice@example.com\n"
)
HEALTHY = "epoch 1 step 3 loss 0.1\n"


@pytest.fixture(scope="module")
def engine():
    return Engine(entries())


@pytest.fixture
def fake(engine, monkeypatch):
    # no real pauses between retries and polls
    monkeypatch.setattr(client, "RETRY_PAUSES", (0.0, 0.0))
    monkeypatch.setattr(client, "POLL_FIRST", 0.01)
    monkeypatch.setattr(client, "POLL_MAX", 0.01)
    monkeypatch.setattr(rootcause.cli, "get_engine", lambda: engine)
    with FakeService(engine) as service:
        yield service


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "train.log"
    path.write_text(LOG)
    return path


def run(fake, *args, token="rc_test", input=None, env=None):  # noqa: S107  (a test token)
    environment = {
        "ROOTCAUSE_URL": fake.url if fake else None,
        "ROOTCAUSE_TOKEN": token,
        "GITHUB_ACTIONS": None,
        "GITLAB_CI": None,
        "GITHUB_STEP_SUMMARY": None,
        **(env or {}),
    }
    return CliRunner().invoke(
        rootcause.cli.app, ["diagnose", *map(str, args)], env=environment, input=input
    )


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_diagnosed_failure_exits_1_with_the_typed_result_on_stdout_only(fake, log):
    result = run(fake, log, "--format", "json")

    assert result.exit_code == 1, result.output
    row = json.loads(result.stdout)
    assert row["failure"]["slug"] == "shape-mismatch"
    assert row["initiating_rank"] == 1
    assert row["file"] == str(log)
    assert row["id"] == next(iter(fake.records))
    assert "status" not in row
    # one quiet line per state change on stderr (not a terminal here)
    for state in ("uploading", "queued", "masking", "matching", "done"):
        assert f"rootcause: {log}: {state}" in result.stderr
    post = fake.posts[0]
    assert post.headers["authorization"] == "Bearer rc_test"
    assert post.headers["x-rootcause-client"] == "cli"
    assert post.files["file"] == ("train.log", LOG.encode())


def test_no_known_failure_exits_0(fake, tmp_path):
    healthy = tmp_path / "ok.log"
    healthy.write_text(HEALTHY)

    result = run(fake, healthy)

    assert result.exit_code == 0, result.output
    assert "no known failure matched" in result.stdout


def test_json_is_an_alias_of_format_json(fake, log):
    result = run(fake, log, "--json")
    assert json.loads(result.stdout)["outcome"] == "diagnosed"


def test_polling_asks_the_service_to_long_poll_and_sleeps_when_it_does_not(fake, log):
    run(fake, log)
    assert len(fake.gets) == 3  # two stages, then the result
    assert all(int(g.query["wait"][0]) > 0 for g in fake.gets)


def test_a_long_polling_service_answers_the_first_poll(fake, log):
    fake.long_poll = True
    result = run(fake, log)
    assert result.exit_code == 1
    assert len(fake.gets) == 1


def test_without_a_token_no_authorization_is_sent(fake, log):
    result = run(fake, log, token=None)
    assert result.exit_code == 1, result.output
    assert "authorization" not in fake.posts[0].headers
    assert all("authorization" not in g.headers for g in fake.gets)


def test_a_visitors_diagnosis_is_polled_with_the_key_of_its_location(fake, log):
    fake.visitor_key = "s3cret"
    result = run(fake, log, token=None)
    assert result.exit_code == 1, result.output
    assert all(g.query["key"] == ["s3cret"] and "wait" in g.query for g in fake.gets)


def test_a_reused_key_the_service_refuses_is_a_usage_error(fake, log):
    fake.post_answers.append(problem(409, "This Idempotency-Key already made a diagnosis."))
    result = run(fake, log, "--idempotency-key", "k")
    assert result.exit_code == 2
    assert "(409): This Idempotency-Key already made a diagnosis." in result.stderr


def test_a_conflict_on_the_clients_own_retry_is_an_outage(fake, log):
    # the first attempt made the diagnosis but its answer was lost; a visitor's is not readable
    fake.post_answers += [problem(502, "proxy"), problem(409, "already made")]
    result = run(fake, log, token=None)
    assert result.exit_code == 4
    assert "lost on the way" in result.stderr


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_token_is_a_usage_error(fake, log, status):
    fake.post_answers.append(problem(status, "Invalid token."))
    result = run(fake, log)
    assert result.exit_code == 2
    assert f"({status}): Invalid token." in result.stderr


def test_anonymous_use_refused_by_the_service_says_how_to_give_a_token(fake, log):
    fake.token = "rc_right"
    result = run(fake, log, token=None)
    assert result.exit_code == 2
    assert "set ROOTCAUSE_TOKEN" in result.stderr


def test_quota_exhausted_exits_3_and_says_when_to_retry(fake, log):
    fake.post_answers.append(
        problem(
            429,
            "The daily allowance of 3 diagnoses is used up.",
            {"Retry-After": "3600", "RateLimit-Limit": "3", "RateLimit-Remaining": "0"},
        )
    )
    result = run(fake, log)
    assert result.exit_code == 3
    assert (
        "allowance is used up (429). The daily allowance of 3 diagnoses is used up."
        " The limit is 3 a day. Retry after 3600 s." in result.stderr
    )
    assert ".;" not in result.stderr
    assert result.stdout == ""


def test_a_server_error_exits_4(fake, log):
    fake.post_answers += [problem(500, "boom")]
    result = run(fake, log)
    assert result.exit_code == 4
    assert "the service failed (500)" in result.stderr


def test_a_503_is_retried_with_the_same_idempotency_key(fake, log):
    fake.post_answers.append(problem(503, "restarting", {"Retry-After": "0"}))
    result = run(fake, log, "--idempotency-key", "job-1")
    assert result.exit_code == 1, result.output
    assert len(fake.posts) == 2
    assert fake.posts[0].headers["idempotency-key"] == fake.posts[1].headers["idempotency-key"]


def test_an_unreachable_service_exits_4_after_retrying(monkeypatch, log):
    monkeypatch.setattr(client, "RETRY_PAUSES", (0.0, 0.0))
    url = f"http://127.0.0.1:{free_port()}"
    result = run(None, log, env={"ROOTCAUSE_URL": url})
    assert result.exit_code == 4
    assert f"cannot reach {url}" in result.stderr


def test_a_service_that_does_not_answer_in_time_exits_4(fake, log, monkeypatch):
    monkeypatch.setattr(client, "IO_TIMEOUT", 0.2)
    fake.delay = 0.6
    result = run(fake, log)
    assert result.exit_code == 4
    assert "timed out" in result.stderr


def test_a_diagnosis_not_done_within_wait_exits_4_and_names_where_it_will_be(fake, log):
    fake.polls_before_done = 10**6
    result = run(fake, log, "--wait", "0.3")
    assert result.exit_code == 4
    assert "no diagnosis after 0.3 s" in result.stderr
    assert "/api/v1/diagnoses/" in result.stderr


def test_a_diagnosis_that_failed_on_the_service_exits_4(fake, log):
    fake.get_answers.append(Answer(200, {"id": "x", "status": "failed", "failure_reason": "oom"}))
    result = run(fake, log)
    assert result.exit_code == 4
    assert "could not diagnose it: oom" in result.stderr


BUSY = "https://rootcause.dev/problems/too-many-concurrent-requests"


def _too_many_at_once():
    answer = problem(429, "At most 4 long polls at once from one client.", {"Retry-After": "0"})
    answer.body["type"] = BUSY
    return answer


def test_a_poll_past_the_clients_bound_of_long_polls_is_waited_out(fake, log):
    fake.get_answers += [_too_many_at_once(), _too_many_at_once()]
    result = run(fake, log)
    assert result.exit_code == 1, result.output  # diagnosed, not "allowance used up" (3)


def test_a_submission_past_the_clients_bound_of_uploads_is_retried(fake, log):
    fake.post_answers.append(_too_many_at_once())
    result = run(fake, log)
    assert result.exit_code == 1, result.output
    assert len(fake.posts) == 2


def test_a_poll_hiccup_is_waited_out(fake, log):
    fake.get_answers += [problem(502, "proxy"), problem(503, "busy")]
    result = run(fake, log)
    assert result.exit_code == 1, result.output


@pytest.mark.parametrize("status", [429, 500])
def test_allow_outage_turns_quota_and_outage_into_0_with_a_warning(fake, log, status):
    fake.post_answers += [problem(status, "nope")] * 3
    result = run(fake, log, "--allow-outage")
    assert result.exit_code == 0
    assert "warning:" in result.stderr
    assert "--allow-outage" in result.stderr


def test_allow_outage_covers_an_unreachable_service(monkeypatch, log):
    monkeypatch.setattr(client, "RETRY_PAUSES", (0.0, 0.0))
    url = f"http://127.0.0.1:{free_port()}"
    result = run(None, log, "--allow-outage", env={"ROOTCAUSE_URL": url})
    assert result.exit_code == 0
    assert "warning: " in result.stderr


def test_allow_outage_does_not_hide_a_bad_token(fake, log):
    fake.post_answers.append(problem(401, "Invalid token."))
    assert run(fake, log, "--allow-outage").exit_code == 2


@pytest.mark.parametrize("url", ["rootcause.example.com", "ftp://example.com", "http://"])
def test_a_malformed_url_is_a_usage_error(log, url):
    result = run(None, log, env={"ROOTCAUSE_URL": url})
    assert result.exit_code == 2
    assert "not a service URL" in result.stderr


def test_a_url_that_is_not_a_rootcause_service_is_a_usage_error(fake, log):
    fake.post_answers.append(
        Answer(404, "<html>no such page</html>", {"Content-Type": "text/html"})
    )
    result = run(fake, log)
    assert result.exit_code == 2
    assert "rootcause service?" in result.stderr


def test_a_page_instead_of_the_api_is_a_usage_error(fake, log):
    fake.post_answers.append(Answer(200, "<html>welcome</html>", {"Content-Type": "text/html"}))
    result = run(fake, log)
    assert result.exit_code == 2
    assert "did not answer like a rootcause service" in result.stderr


def test_no_service_and_no_offline_is_a_usage_error(log):
    result = run(None, log, env={"ROOTCAUSE_URL": None})
    assert result.exit_code == 2
    assert "--offline" in result.stderr


def test_an_unreadable_file_is_a_usage_error_and_nothing_is_sent(fake, tmp_path, log):
    result = run(fake, tmp_path / "missing.log", log)
    assert result.exit_code == 2  # a usage error comes first, even beside a diagnosis
    assert "missing.log: no such file" in result.stderr
    assert len(fake.posts) == 1
    assert json.loads(json.dumps(fake.posts[0].files["file"][0])) == "train.log"


def test_a_log_the_service_refuses_is_a_usage_error(fake, tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("")
    result = run(fake, empty)
    assert result.exit_code == 2
    assert "refused the log (400): The log is empty." in result.stderr


def test_each_file_has_its_own_idempotency_key_and_a_retry_makes_no_second_diagnosis(
    fake, log, tmp_path
):
    other = tmp_path / "other.log"
    other.write_text(HEALTHY)

    first = run(fake, log, other, "--idempotency-key", "job-7", "--json")
    again = run(fake, log, other, "--idempotency-key", "job-7", "--json")

    assert first.exit_code == again.exit_code == 1, first.output
    keys = [p.headers["idempotency-key"] for p in fake.posts]
    assert keys[:2] == keys[2:]
    assert keys[0] != keys[1]
    assert all(k.startswith("job-7:") for k in keys)
    assert len(fake.records) == 2
    rows = [json.loads(line) for line in first.stdout.splitlines()]
    assert [r["outcome"] for r in rows] == ["diagnosed", "no_match"]
    assert first.stdout == again.stdout


def test_without_a_key_each_file_still_gets_one_so_retries_are_safe(fake, log, tmp_path):
    other = tmp_path / "other.log"
    other.write_text(HEALTHY)
    run(fake, log, other)
    keys = [p.headers["idempotency-key"] for p in fake.posts]
    assert len(set(keys)) == 2
    assert all(k.startswith("rootcause-") for k in keys)


def test_standard_input_and_gz_are_sent_with_their_names(fake, tmp_path):
    packed = tmp_path / "rank1.log.gz"
    packed.write_bytes(gzip.compress(LOG.encode()))

    result = run(fake, packed, "-", input=HEALTHY)

    assert result.exit_code == 1, result.output
    assert [p.files["file"][0] for p in fake.posts] == ["rank1.log", "stdin"]
    assert fake.posts[1].files["file"][1] == HEALTHY.encode()


def test_ci_metadata_is_sent_beside_the_log(fake, log):
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "acme/train",
        "GITHUB_RUN_ID": "42",
        "GITHUB_JOB": "smoke",
        "GITHUB_SHA": "abc123",
    }
    run(fake, log, "--label", "nightly", "--label", "gpu=a100", env=env)
    assert fake.posts[0].fields == {
        "run_url": ["https://github.com/acme/train/actions/runs/42"],
        "job": ["smoke"],
        "commit": ["abc123"],
        "labels": ["nightly", "gpu=a100"],
    }


def test_outside_ci_only_labels_are_sent(fake, log):
    run(fake, log)
    run(fake, log, "--label", "local")
    assert [p.fields for p in fake.posts] == [{}, {"labels": ["local"]}]


def test_the_token_is_not_sent_to_another_host_named_by_location(fake, engine, log):
    with FakeService(engine) as elsewhere:
        elsewhere.records["x"] = {"id": "x", "status": "queued", "_result": fake.diagnose(b"")}
        fake.post_answers.append(
            Answer(
                202,
                {"id": "x", "status": "queued"},
                {"Location": f"{elsewhere.url}/api/v1/diagnoses/x"},
            )
        )
        result = run(fake, log)
        assert result.exit_code == 0, result.output
        assert elsewhere.gets
        assert all("authorization" not in g.headers for g in elsewhere.gets)


def test_merge_sends_one_job_and_gives_each_evidence_line_its_file(fake, tmp_path):
    rank0 = tmp_path / "rank0.log"
    rank0.write_text("step 1 loss 2.0\nRuntimeError: gloo/transport: Connection closed by peer\n")
    rank1 = tmp_path / "rank1.log"
    rank1.write_text(
        "step 1 loss 2.0\nstep 2 loss 1.9\n"
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 4x2)\n"
    )

    result = run(fake, rank0, rank1, "--merge", "--json", "--idempotency-key", "k")

    assert result.exit_code == 1, result.output
    assert len(fake.posts) == 1
    sent = fake.posts[0].files["file"]
    assert sent[0] == "rank0.log+rank1.log"
    row = json.loads(result.stdout)
    assert row["file"] == f"{rank0},{rank1}"
    assert row["failure"]["slug"] == "shape-mismatch"
    assert row["initiating_rank"] == 1
    assert {"file": str(rank1), "line": 3} in [
        {"file": e["file"], "line": e["line"]} for e in row["evidence"]
    ]
    assert {r["rank"]: r["first_error_line"] for r in row["ranks"]} == {0: 2, 1: 3}


def test_merge_of_big_logs_sends_their_evidence_with_the_lines_in_place(
    fake, tmp_path, monkeypatch
):
    monkeypatch.setattr(inputs, "EXTRACT_ABOVE", 10_000)
    healthy = "".join(f"step {n} loss 1.{n:04d}\n" for n in range(2000))
    rank0 = tmp_path / "rank0.log"
    rank0.write_text(healthy + "RuntimeError: gloo/transport: Connection closed by peer\n")
    rank1 = tmp_path / "rank1.log"
    rank1.write_text(
        healthy + "RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x3 and 4x2)\n"
    )

    result = run(fake, rank0, rank1, "--merge", "--json")

    assert result.exit_code == 1, result.output
    assert "sending the evidence only" in result.stderr
    sent = gzip.decompress(fake.posts[0].files["file"][1]).decode()
    assert sent.count("\n") == 2 * 2001  # left-out lines are empty: numbering unchanged
    assert len(sent) < (rank0.stat().st_size + rank1.stat().st_size) / 3
    assert "[rank1]: RuntimeError: mat1 and mat2" in sent
    row = json.loads(result.stdout)
    assert row["initiating_rank"] == 1
    assert {"file": str(rank1), "line": 2001} in [
        {"file": e["file"], "line": e["line"]} for e in row["evidence"]
    ]
