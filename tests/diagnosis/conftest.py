import pytest


@pytest.fixture(autouse=True)
def _catalogue(catalogue):
    return catalogue
