import logging


def test_secret_url_arguments_never_reach_the_request_log(client, caplog, db):
    caplog.set_level(logging.INFO, logger="rootcause.request")

    client.get("/accounts/reset/MQ/c4f9a2-0123456789abcdef0123456789abcdef/?x=secret-query")
    client.get("/accounts/verify/signed-verification-token-value/")

    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "/accounts/reset/<redacted>/<redacted>/" in logged
    assert "/accounts/verify/<redacted>/" in logged
    assert "0123456789abcdef" not in logged
    assert "signed-verification-token-value" not in logged
    assert "secret-query" not in logged
