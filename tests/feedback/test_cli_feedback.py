"""`rootcause feedback` against a live server: by id with a token, by a visitor's link, and the
exit codes of what goes wrong."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from feedback.models import Feedback
from rootcause.cli import app
from tests.diagnosis.logs import OOM_LOG

pytestmark = pytest.mark.django_db(transaction=True)


def _diagnosed(live_server, **headers) -> dict:
    import httpx

    response = httpx.post(
        f"{live_server.url}/api/v1/diagnoses",
        content=OOM_LOG.encode(),
        headers={"Content-Type": "text/plain", **headers},
        timeout=60,
    )
    assert response.status_code == 202, response.text
    return response.json()


def test_a_member_says_wrong_and_names_the_right_class(live_server, acme_token):
    diagnosis = _diagnosed(live_server, Authorization=f"Bearer {acme_token}")
    env = {"ROOTCAUSE_URL": live_server.url, "ROOTCAUSE_TOKEN": acme_token}

    result = CliRunner().invoke(
        app,
        ["feedback", diagnosis["id"], "--wrong", "--class", "activation-oom", "--note", "acts"],
        env=env,
    )

    assert result.exit_code == 0, result.output
    assert "recorded: wrong (the right class: activation-oom)" in result.stdout
    stored = Feedback.objects.get()
    assert (stored.verdict, stored.correct_slug, stored.note) == ("wrong", "activation-oom", "acts")


def test_a_visitor_answers_with_the_link_alone(live_server):
    diagnosis = _diagnosed(live_server)
    link = f"{live_server.url}/diagnoses/{diagnosis['id']}/?key={diagnosis['access_key']}"

    result = CliRunner().invoke(app, ["feedback", link, "--right"], env={"ROOTCAUSE_URL": ""})

    assert result.exit_code == 0, result.output
    assert Feedback.objects.get().verdict == "right"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--right", "--wrong"], "--right or --wrong"),
        ([], "--right or --wrong"),
        (["--right", "--class", "activation-oom"], "use it with --wrong"),
        (["--wrong", "--class", "no-such-class"], "no class of the catalogue"),
    ],
)
def test_a_refused_answer_exits_2_and_says_why(live_server, acme_token, args, says):
    diagnosis = _diagnosed(live_server, Authorization=f"Bearer {acme_token}")
    env = {"ROOTCAUSE_URL": live_server.url, "ROOTCAUSE_TOKEN": acme_token}

    result = CliRunner().invoke(app, ["feedback", diagnosis["id"], *args], env=env)

    assert result.exit_code == 2, result.output
    assert says in result.output
    assert not Feedback.objects.exists()


def test_another_organisations_diagnosis_and_a_dead_service(
    live_server, acme_token, umbrella_token
):
    diagnosis = _diagnosed(live_server, Authorization=f"Bearer {acme_token}")
    outsider = {"ROOTCAUSE_URL": live_server.url, "ROOTCAUSE_TOKEN": umbrella_token}

    refused = CliRunner().invoke(app, ["feedback", diagnosis["id"], "--right"], env=outsider)
    dead = CliRunner().invoke(
        app, ["feedback", diagnosis["id"], "--right"], env={"ROOTCAUSE_URL": "http://127.0.0.1:9"}
    )

    assert refused.exit_code == 2, refused.output
    assert "(404)" in refused.output
    assert dead.exit_code == 4, dead.output
    assert not Feedback.objects.exists()
