from __future__ import annotations

import html
import re

import pytest
from django.conf import settings

from billing_tiers.models import QuotaCharge
from diagnosis.models import Diagnosis
from tests.diagnosis.logs import OOM_LOG, PLANTED_SECRETS

# Not transactional: a test that needs the pipeline (enqueued on commit, run eagerly) runs the
# on-commit callbacks of its request itself (see test_api.py).
pytestmark = pytest.mark.django_db


def test_the_home_page_offers_the_form_and_the_allowance_to_visitors(client):
    response = client.get("/")

    text = response.content.decode()
    assert response.status_code == 200
    assert 'name="log_text"' in text
    assert "<strong>3 of 3</strong> diagnoses left today" in text
    assert '<span class="badge">anonymous</span>' in text
    assert 'href="/accounts/signup/"' in text
    assert "/admin/login/" not in text


def test_the_home_page_shows_what_is_left_of_the_organisations_allowance(
    client, alice, acme, django_capture_on_commit_callbacks
):
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/", {"log_text": OOM_LOG})

    text = client.get("/").content.decode()

    assert "<strong>2 of 3</strong> diagnoses left today" in text
    assert '<span class="badge">free</span>' in text


def test_a_pasted_log_is_diagnosed_and_shown_masked(
    client, alice, acme, django_capture_on_commit_callbacks
):
    client.force_login(alice)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/", {"log_text": OOM_LOG})

    assert response.status_code == 302
    assert "key=" not in response["Location"]  # the organisation's: its members open it
    page = client.get(response["Location"])
    text = page.content.decode()
    assert page.status_code == 200
    assert "Optimizer State Memory Explosion" in text
    assert "<h3>Fix</h3>" in text
    assert 'id="sign-up"' not in text
    for value in PLANTED_SECRETS.values():
        assert value not in text


def test_an_empty_form_gets_a_message_not_a_diagnosis(client, alice, acme):
    client.force_login(alice)

    response = client.post("/", {"log_text": ""})

    assert response.status_code == 400
    assert b"Paste a log or choose a file." in response.content
    assert Diagnosis.objects.count() == 0


def test_a_binary_upload_gets_a_message(client, alice, acme):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(alice)

    response = client.post("/", {"log_file": SimpleUploadedFile("core", b"\x7fELF\x00\x00")})

    assert response.status_code == 400
    assert b"binary file" in response.content


def test_another_organisation_cannot_open_a_diagnosis_page(
    client, alice, acme, charlie, umbrella, django_capture_on_commit_callbacks
):
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        location = client.post("/", {"log_text": OOM_LOG})["Location"]
    client.force_login(charlie)

    assert client.get(location).status_code == 404
    assert location not in client.get("/diagnoses/").content.decode()


def test_a_diagnosis_page_without_a_key_sends_a_visitor_to_sign_in(client, alice, acme):
    client.force_login(alice)
    location = client.post("/", {"log_text": OOM_LOG})["Location"]
    client.logout()

    response = client.get(location)

    assert response.status_code == 302
    assert response["Location"].startswith(f"{settings.LOGIN_URL}?next=")


def test_someone_without_an_organisation_gets_a_personal_one_which_is_charged(
    client, django_user_model
):
    dora = django_user_model.objects.create_user("dora", "dora@example.com", "pw-dora-123")
    client.force_login(dora)

    response = client.post("/", {"log_text": OOM_LOG})

    assert response.status_code == 302
    diagnosis = Diagnosis.objects.get()
    organization = diagnosis.organization
    assert organization is not None
    assert organization.memberships.get().user == dora
    assert "<strong>2 of 3</strong>" in client.get("/").content.decode()
    assert QuotaCharge.objects.get().subject == f"org:{organization.pk}"


RANK_LOGS = {
    # one rank reports the error, another only its progress: the table lists rank 1 alone
    "one rank": (
        "[rank0]: step 7 loss 2.1\n"
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
        "Rank 1 failed first.",
    ),
    # every rank raises the same error: none is singled out
    "none": (
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
        "No rank can be singled out as the first to fail: ranks 0 and 1 each reported the same "
        "failure, optimizer-state-oom.",
    ),
}


@pytest.mark.parametrize("shape", list(RANK_LOGS))
def test_the_rank_sentence_says_what_the_rank_table_shows(
    client, alice, acme, django_capture_on_commit_callbacks, shape
):
    log, expected = RANK_LOGS[shape]
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/", {"log_text": log})

    text = html.unescape(client.get(response["Location"]).content.decode())

    (sentence,) = re.findall(r'<p id="initiating-rank">(.*?)</p>', text)
    assert sentence == expected
    assert "followed from it" not in text
    assert "singled out: no rank" not in text


def test_a_failure_outside_the_catalogue_says_so_and_names_the_rank_its_launcher_saw(
    client, alice, acme, catalogue, django_capture_on_commit_callbacks
):
    # horovod/horovod#926's kind: mpirun's one line about a rank killed by SIGILL
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/",
            {
                "log_text": "mpirun noticed that process rank 0 with PID 0 on node gpu-01 exited "
                "on signal 4 (Illegal instruction).\n"
            },
        )

    text = html.unescape(client.get(response["Location"]).content.decode())
    assert "No known failure matched" in text
    (sentence,) = re.findall(r'<p id="initiating-rank">(.*?)</p>', text)
    assert sentence.startswith("Rank 0 most likely failed first")
    assert "outside the catalogue" in text


@pytest.mark.parametrize(
    ("log", "said", "not_said"),
    [
        ("epoch 1 step 3 loss 0.1\n", "No traceback or error line was found", "lines below"),
        (
            "[E1201 04:01:01.100 53136 ProcessGroupNCCL.cpp:2223] [Rank 0] a complaint\n",
            "The lines below are the first errors found",
            "No traceback or error line",
        ),
    ],
)
def test_the_no_match_page_speaks_of_the_lines_it_shows(
    client, alice, acme, django_capture_on_commit_callbacks, log, said, not_said
):
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/", {"log_text": log})

    text = client.get(response["Location"]).content.decode()

    assert "No known failure matched" in text
    assert said in text
    assert not_said not in text
