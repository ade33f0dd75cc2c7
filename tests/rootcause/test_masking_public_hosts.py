"""Public forges and CI services name no one: a run's URL stays linkable, the secret in it does
not (issue 34), on the light client and on the server alike; MASKING_PUBLIC_HOSTS adds hosts."""

from __future__ import annotations

import pytest

from rootcause.masking import Masker, mask_log
from rootcause.masking.recognizer import shared_analyzer
from rootcause.masking.validators import PUBLIC_HOSTS_ENV, parse_public_hosts


def both(text: str) -> str:
    def mask(analyzer: object) -> str:
        masker = Masker(secret=b"test-secret", analyzer=analyzer)  # type: ignore[arg-type]
        return "".join(mask_log(lambda: [text.encode()], masker))

    client, server = mask(None), mask(shared_analyzer())
    assert client == server
    return client


KEPT = [
    "CI: https://gitlab.com/acme/ml-train/-/pipelines/1234567 failed at stage train",
    "see https://github.com/acme/ml-train/actions/runs/9876543210/job/27",
    "Workflow: https://app.circleci.com/pipelines/github/acme/ml-train/4411/workflows/ab12",
    "Build: https://dev.azure.com/acme/ml-train/_build/results?buildId=5521&view=logs",
    "https://bitbucket.org/acme/ml-train/pipelines/results/318/steps/{4b1c}",
    "Buildkite: https://buildkite.com/acme/ml-train/builds/2207#0190a1b2",
    "https://app.travis-ci.com/github/acme/ml-train/builds/271828",
    "Coverage: https://app.codecov.io/gh/acme/ml-train/pull/42",
]


@pytest.mark.parametrize("line", KEPT)
def test_a_run_s_url_on_a_public_forge_or_ci_service_stays_linkable(line: str) -> None:
    assert both(line) == line


SECRETS = [
    (
        "curl https://circleci.com/api/v2/project/gh/acme/ml/pipeline?circle-token=CCIPAT_7Hq2"
        "Lm9Np3Qr5St8Vw1Xy4Za6bC",
        "curl https://circleci.com/api/v2/project/gh/acme/ml/pipeline?circle-token=<SECRET>",
    ),
    (
        "git clone https://x-token-auth:Zq8mN2pL5vR7tK3w@bitbucket.org/acme/ml-train.git",
        "git clone https://<URL_CREDENTIALS>@bitbucket.org/acme/ml-train.git",
    ),
    (
        "POST https://gitlab.com/api/v4/projects/42/trigger/pipeline?token=glpat-Xk3v_9QmZr-7TbLw2PaH",
        "POST https://gitlab.com/api/v4/projects/42/trigger/pipeline?token=<GITLAB_TOKEN>",
    ),
    (
        "https://buildkite.com/acme/ml/builds/12?access_token=bkua_6fGh7Jk2Lm9Np3Qr5St8Vw1Xy4Za",
        "https://buildkite.com/acme/ml/builds/12?access_token=<SECRET>",
    ),
]


@pytest.mark.parametrize(("line", "expected"), SECRETS)
def test_the_secret_in_a_public_service_s_url_is_masked(line: str, expected: str) -> None:
    assert both(line) == expected


def test_a_look_alike_of_a_public_host_is_masked() -> None:
    masked = both(
        "mirror at https://dev.azure.com.mirror-7.io/acme and ci-4.bitbucket.org.example.kr"
    )
    assert "mirror-7" not in masked
    assert "example.kr" not in masked


def test_the_operator_adds_public_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    line = "Jenkins: https://jenkins.acme-corp.com/job/ml-train/12/console"
    assert "acme-corp" not in both(line)
    monkeypatch.setenv(PUBLIC_HOSTS_ENV, " jenkins.acme-corp.com , ci.example.org")
    assert both(line) == line
    assert both("https://build-3.ci.example.org/x") == "https://build-3.ci.example.org/x"


def test_public_hosts_must_be_host_names() -> None:
    assert parse_public_hosts("Jenkins.Acme-Corp.com., ,ci.example.org") == (
        b"jenkins.acme-corp.com",
        b"ci.example.org",
    )
    for bad in ("localhost", "https://ci.example.org", "ci example.org", "*.example.org"):
        with pytest.raises(ValueError, match="not a host name"):
            parse_public_hosts(bad)


def test_a_verb_where_mpirun_left_the_node_name_out_is_no_host() -> None:
    # shared/corpus/dev3 gh-out-of-taxonomy__horovod-926: masking "exited" lost the diagnosis
    line = "mpirun noticed that process rank 0 with PID 0 on node exited on signal 4 (Illegal instruction)."
    assert both(line) == line
    assert both("rank 3 on node athena exited") == "rank 3 on node <HOST_1> exited"
