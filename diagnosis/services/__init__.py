"""Writes of the diagnosis life cycle, by concern:

- `submission`: intake of a log (refusals, staging, the charge with the row, the enqueue);
- `lifecycle`: the pipeline's enqueue, stage claims with leases, completion and failure;
- `upkeep`: the periodic sweeps and purge, and deletion.

A package rather than one module because the three change for different reasons and together
passed 900 lines; callers import the names below from `diagnosis.services` as before. A test
that replaces one of them replaces it in the module that calls it (e.g. `submission`'s
`enqueue_pipeline`): the names here are the same objects, re-exported.
"""

from diagnosis.masking import masking_secret
from diagnosis.services.lifecycle import (
    Busy,
    Claim,
    claim_stage,
    complete_stage,
    enqueue_pipeline,
    fail_diagnosis,
    handed_on,
    pipeline_from,
    renew_lease,
)
from diagnosis.services.submission import (
    IDEMPOTENCY_WINDOW,
    JobMetadata,
    KeyAlreadyUsed,
    KeyReused,
    LogRejected,
    Submission,
    submit_bundle,
    submit_diagnosis,
)
from diagnosis.services.upkeep import (
    SWEEP_HEARTBEAT,
    StagingSweep,
    delete_diagnosis,
    last_sweep_age,
    purge_expired_diagnoses,
    record_sweep,
    requeue_stuck_diagnoses,
    sweep_staging,
)
from diagnosis.staging import LOST_IN_OUTAGE

__all__ = [
    "IDEMPOTENCY_WINDOW",
    "LOST_IN_OUTAGE",
    "SWEEP_HEARTBEAT",
    "Busy",
    "Claim",
    "JobMetadata",
    "KeyAlreadyUsed",
    "KeyReused",
    "LogRejected",
    "StagingSweep",
    "Submission",
    "claim_stage",
    "complete_stage",
    "delete_diagnosis",
    "enqueue_pipeline",
    "fail_diagnosis",
    "handed_on",
    "last_sweep_age",
    "masking_secret",
    "pipeline_from",
    "purge_expired_diagnoses",
    "record_sweep",
    "renew_lease",
    "requeue_stuck_diagnoses",
    "submit_bundle",
    "submit_diagnosis",
    "sweep_staging",
]
