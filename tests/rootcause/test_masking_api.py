"""The leaks of issue 13 through the service: a log and a file name posted to the API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts.actors import actor_for_person
from accounts.services import add_masking_rule
from encyclopedia.services import load_catalogue
from tests.catalogue import make_entry
from tests.diagnosis.logs import OOM_LOG
from tests.redis_namespace import delete_run_keys

pytestmark = pytest.mark.django_db

URL = "/api/v1/diagnoses"

LEAKS = {
    "ip_in_path": "10.20.30.40",
    "ip_in_log_name": "10.12.4.77",
    "host_in_log_name": "gpu-node-17.corp.acme.internal",
    "user_at_host": "jdoe@gpu-node-17",
    "phone": "(212) 555-0143",
    "phone_dotted": "650.555.0129",
    "phone_international": "+49 30 90182063",
    "card_4_6_5": "3751 896817 76744",
    "password_punctuated": "%M5hqkSYg1vFoLf%",
    "early_mention": "trainer-box-42",
}

LEAKY_LOG = (
    "[launcher] trainer-box-42 is slow to answer\n"
    "ssh jdoe@gpu-node-17 'nvidia-smi' && tee run_10.12.4.77.log\n"
    "writing gpu-node-17.corp.acme.internal.log\n"
    "sample 3: {'text': 'Call me at (212) 555-0143 or 650.555.0129', 'label': 1}\n"
    "ALERT: on-call +49 30 90182063; card 3751 896817 76744\n"
    "config: {'user': 'svc', 'password': '%M5hqkSYg1vFoLf%'}\n"
    + OOM_LOG.replace(
        "torch.OutOfMemoryError: CUDA out of memory.",
        "torch.OutOfMemoryError: CUDA out of memory. Saving /data/ckpt_10.20.30.40/step_1000.pt.",
    )
    + "trainer-box-42:18802:18899 [0] NCCL INFO Bootstrap : Using eth0\n"
)


@pytest.fixture(autouse=True)
def _one_entry_catalogue(db: Any) -> Iterator[None]:
    load_catalogue(
        entries=[
            make_entry(
                "optimizer-state-oom",
                fingerprints={
                    "signals": [
                        {"id": "oom", "pattern": r"CUDA out of memory", "weight": 0.9},
                        {
                            "id": "step",
                            "pattern": r"optimizer\.step\(\)",
                            "weight": 0.2,
                            "kind": "support",
                        },
                    ]
                },
            )
        ]
    )
    yield
    delete_run_keys()


def test_a_posted_log_keeps_none_of_the_leaks(acme_api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = acme_api.post(URL, data=LEAKY_LOG.encode(), content_type="text/plain")
    assert response.status_code == 202, response.content

    result = acme_api.get(response["Location"])
    body = result.content.decode()
    assert result.json()["status"] == "done"
    # The evidence quotes the line that held the address, masked.
    assert "ckpt_<IP_" in body
    for name, leak in LEAKS.items():
        assert leak not in body, name
    masking = result.json()["masking"]
    for entity in ("IP_ADDRESS", "HOSTNAME", "USERNAME", "PHONE_NUMBER", "CREDIT_CARD", "SECRET"):
        assert masking.get(entity, 0) >= 1, entity


@pytest.mark.parametrize(
    ("name", "leak"),
    [
        ("ckpt_10.20.30.40_step_1000.log", "10.20.30.40"),
        ("run_10.12.4.77.log", "10.12.4.77"),
        ("gpu-node-17.corp.acme.internal.log", "gpu-node-17"),
    ],
)
def test_an_uploaded_file_name_is_masked(acme_api, name: str, leak: str) -> None:
    response = acme_api.post(URL, {"file": SimpleUploadedFile(name, OOM_LOG.encode())})

    assert response.status_code == 202, response.content
    filename = response.json()["filename"]
    assert leak not in filename
    assert filename.endswith(".log")
    assert "<IP_1>" in filename or "<HOST_1>" in filename


@pytest.fixture
def codename_recognizers(tmp_path: Path) -> Path:
    """An operator's recognizer file (MASKING_RECOGNIZERS_FILE) naming one project code name."""
    path = tmp_path / "recognizers.yaml"
    path.write_text(
        "recognizers:\n"
        '  - name: "Project code names"\n'
        '    supported_language: "en"\n'
        '    supported_entity: "PROJECT_CODENAME"\n'
        '    deny_list: ["bluebird"]\n'
    )
    return path


def test_a_file_name_gets_presidio_s_recognizers_where_they_could_find_something(acme_api):
    # Only Presidio's validated IBAN recognizer finds this one: the file name's masker calls the
    # analyzer for it, though not for a plain name.
    response = acme_api.post(
        URL, {"file": SimpleUploadedFile("payout-DE89370400440532013000.log", OOM_LOG.encode())}
    )

    assert response.status_code == 202, response.content
    filename = response.json()["filename"]
    assert "DE89370400440532013000" not in filename
    assert filename == "payout-<IBAN_CODE>.log"


def test_a_file_name_is_masked_with_the_operators_recognizers(
    acme_api, codename_recognizers, settings
):
    settings.MASKING_RECOGNIZERS_FILE = str(codename_recognizers)

    response = acme_api.post(URL, {"file": SimpleUploadedFile("bluebird.log", OOM_LOG.encode())})

    assert response.status_code == 202, response.content
    assert response.json()["filename"] == "<PROJECT_CODENAME>.log"


def test_the_pipeline_masks_through_presidio_with_the_operators_recognizers(
    acme_api, django_capture_on_commit_callbacks, codename_recognizers, settings
):
    """A recognizer registered through Presidio's registry (the YAML file of the setting)
    changes what a real pipeline run stores: the mask stage runs Presidio's analyzer."""
    log = OOM_LOG.replace("CUDA out of memory.", "CUDA out of memory in bluebird.")
    with django_capture_on_commit_callbacks(execute=True):
        plain = acme_api.post(URL, data=log.encode(), content_type="text/plain")
    settings.MASKING_RECOGNIZERS_FILE = str(codename_recognizers)
    with django_capture_on_commit_callbacks(execute=True):
        configured = acme_api.post(URL, data=log.encode(), content_type="text/plain")

    before = acme_api.get(plain["Location"]).json()
    after = acme_api.get(configured["Location"]).json()
    assert "bluebird" in str(before["evidence"])
    assert "bluebird" not in str(after)
    assert "<PROJECT_CODENAME>" in str(after["evidence"])
    assert after["masking"]["PROJECT_CODENAME"] >= 1


def test_an_uploaded_file_name_is_masked_with_the_organisations_rules(acme_api, acme, alice):
    add_masking_rule(actor=actor_for_person(alice), kind="term", value="bluebird", label="project")
    name = "bluebird_run_7.log"

    response = acme_api.post(
        URL, {"file": SimpleUploadedFile(name, OOM_LOG.encode()), "job": "train-bluebird"}
    )

    assert response.status_code == 202, response.content
    body = response.json()
    assert "bluebird" not in body["filename"]
    assert "<PROJECT_1>" in body["filename"]
    assert "bluebird" not in body["job"]
