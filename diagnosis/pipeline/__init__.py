"""The pipeline a diagnosis goes through: the stage table (`table.py`), the row type and what a
runner gets and gives (`stage.py`), the runners (`runners.py`), and the loop that claims, runs
and completes the stages one after the other (`loop.py`), which `workers/` calls from its
Celery tasks.

Nothing is imported here: `diagnosis.models` reads `stage.py`, and `table.py` imports the
runners, which import the models.
"""
